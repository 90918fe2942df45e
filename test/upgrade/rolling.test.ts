/**
 * A rolling upgrade from the released build to this one, under load: the newest package of
 * test/fixtures/releases (made by `npm run pack:release`), unpacked with its own dist/ and lua/,
 * runs executors, scheduler replicas and a producer as child processes; executors, replicas and a
 * producer of the sources join them, and the released ones are stopped one by one (SIGTERM, and
 * kill -9 for one executor and one replica) while both producers submit and the periodic tasks
 * fire. Every job and every occurrence is counted: none lost, none run twice but those the
 * killed executor held, every occurrence submitted once. A change to the data format that the
 * released build cannot read, or that cannot read what it wrote, fails here.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobState, PeriodicTasks, Queue } from '../../src/index.js';
import { checkReruns, type Fault, inFlight, jobFields, readRuns, runsKey } from '../fixtures/runs.js';
import { PERIODIC_TASKS, submittedKey } from '../fixtures/upgrade-plan.js';
import { rota } from '../helpers/cli.js';
import { ROOT, tempDir } from '../helpers/package.js';
import { NodeProcess } from '../helpers/processes.js';
import { privateRedis, uniqueQueue } from '../helpers/setup.js';
import { until } from '../helpers/wait.js';

const RELEASES = join(ROOT, 'test/fixtures/releases');
const NODE = join(ROOT, 'test/fixtures/upgrade-node.ts');
const SOURCES = join(ROOT, 'src/index.ts');
const PENDING: readonly JobState[] = ['delayed', 'waiting', 'scheduled', 'running', 'stuck'];

/** The newest released package kept in test/fixtures/releases. */
function newestRelease(): string {
  const order = (v: string) => v.split('.').map(Number);
  const found = readdirSync(RELEASES)
    .map((f) => /^rota-(\d+\.\d+\.\d+)\.tgz$/.exec(f))
    .filter((m) => m !== null)
    .sort((a, b) => {
      const [x, y] = [order(a[1]), order(b[1])];
      return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
    });
  const newest = found.at(-1);
  if (!newest) throw new Error(`no released package in ${RELEASES}: make one with \`npm run pack:release\``);
  return join(RELEASES, newest[0]);
}

/** The package of `tarball` unpacked as node_modules/rota of a new folder, its dependencies linked to the checkout's. */
function install(tarball: string): { dir: string; entry: string; version: string } {
  const dir = tempDir('upgrade');
  try {
    return unpack(tarball, dir);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function unpack(tarball: string, dir: string): { dir: string; entry: string; version: string } {
  const pkg = join(dir, 'node_modules/rota');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', pkg, '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as {
    version: string;
    // (a string, or conditions of their own: `{ types, default }`)
    exports: { '.': { import: string | { default: string } } };
    dependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
  };
  // (only what the package declares: a dependency it forgot fails its processes here)
  for (const dep of Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })) {
    const from = join(ROOT, 'node_modules', dep);
    if (!existsSync(from)) continue;
    const to = join(dir, 'node_modules', dep);
    mkdirSync(dirname(to), { recursive: true });
    symlinkSync(from, to, 'dir');
  }
  const entry = manifest.exports['.'].import;
  return { dir, entry: join(pkg, typeof entry === 'string' ? entry : entry.default), version: manifest.version };
}

/**
 * The data migration of the sources' CLI, where it has one (`rota migrate` with data steps, which
 * `--dry-run` shows), run on the queue: the upgrade's last step. Answers what it printed, or
 * null when this build's `rota migrate` only loads the function library.
 */
async function migrateIfAny(url: string, queue: string): Promise<string | null> {
  const help = await rota(['migrate', '--help']);
  if (!help.stdout.includes('--dry-run')) return null;
  const res = await rota(['--redis', url, '--queue', queue, 'migrate']);
  expect(res.code, res.stderr).toBe(0);
  return res.stdout.trim();
}

const redis = privateRedis();
const procs: NodeProcess[] = [];
let release: ReturnType<typeof install>;
beforeAll(() => {
  release = install(newestRelease());
});
afterAll(async () => {
  for (const p of procs) await p.kill();
  if (release) rmSync(release.dir, { recursive: true, force: true });
});

describe('a rolling upgrade from the released build', () => {
  it('released executors and replicas replaced one by one under load: no job lost or run twice but what a kill held, every occurrence once', async () => {
    const queue = uniqueQueue('upgrade');
    const url = redis.server.url;
    const admin = redis.admin;
    const pids = { old: new Set<number>(), new: new Set<number>() };
    type Build = keyof typeof pids;

    /** A process of `build`, once it is ready (its ready message gives its executor or replica id). */
    const start = async (build: Build, role: string, env: NodeJS.ProcessEnv = {}) => {
      const p = new NodeProcess(NODE, [], {
        ROTA_MODULE: build === 'old' ? release.entry : SOURCES,
        ROLE: role,
        REDIS_URL: url,
        QUEUE: queue,
        ...env,
      });
      procs.push(p);
      const { ready } = await Promise.race([
        p.waitFor<{ ready: string }>((m) => m.ready !== undefined, 30_000),
        p.exited.then((code) => {
          throw new Error(
            `the ${role} of the ${build === 'old' ? 'released build' : 'sources'} exited (${code}) before it was ready`,
          );
        }),
      ]);
      pids[build].add(p.pid);
      return Object.assign(p, { id: ready });
    };
    const stop = async (p: NodeProcess) => {
      p.signal('SIGTERM');
      expect(await p.exited).toBe(0);
    };
    const runCount = () => admin.llen(runsKey(queue));
    /** Waits until `n` more executions were recorded: the queue went on working meanwhile. */
    const more = async (n: number, after: string) => {
      const from = await runCount();
      await until(`${n} more runs after ${after}`, async () => (await runCount()) >= from + n, { timeoutMs: 20_000 });
    };
    const tasks = new PeriodicTasks(queue, { connection: url });
    /** Waits for a next occurrence of the every-second task to be submitted. */
    const nextTick = async (after: string) => {
      const [last] = await tasks.runs('every-second', { limit: 1 });
      await until(
        `an occurrence after ${after}`,
        async () => ((await tasks.runs('every-second', { limit: 1 }))[0]?.occurrence ?? 0) > (last?.occurrence ?? 0),
        { timeoutMs: 20_000 },
      );
    };

    // The released build alone: three executors, two scheduler replicas, a producer that defines the periodic tasks.
    const oldExecutors = await Promise.all([0, 1, 2].map(() => start('old', 'executor')));
    const oldReplicas = await Promise.all([0, 1].map(() => start('old', 'scheduler')));
    const oldProducer = await start('old', 'producer', { LABEL: 'old', PERIODIC: '1' });
    const windowStart = Date.now();
    await more(40, 'the released build started');
    await nextTick('the released build started');

    // The sources join: three executors, two replicas, a producer.
    const newExecutors = await Promise.all([0, 1, 2].map(() => start('new', 'executor')));
    const newReplicas = await Promise.all([0, 1].map(() => start('new', 'scheduler')));
    const newProducer = await start('new', 'producer', { LABEL: 'new' });
    await more(40, 'the sources joined');

    // The released processes stopped one by one; the kill -9 of an executor may re-run what it held.
    const faults: Fault[] = [];
    await stop(oldExecutors[0]);
    await more(30, 'a released executor stopped');
    await stop(oldReplicas[0]);
    await nextTick('a released replica stopped');
    const killed = oldExecutors[1];
    const held = new Set(
      await until('the executor to kill holding jobs', async () => (await inFlight(admin, queue, killed.id)).join(' '), {
        intervalMs: 5,
      }).then((ids) => ids.split(' ')),
    );
    await killed.kill();
    // (its leases stand until they expire: what it held when it died)
    for (const id of await inFlight(admin, queue, killed.id)) held.add(id);
    faults.push({ kind: 'kill', pid: killed.pid, held });
    await more(30, 'a released executor killed');
    await oldReplicas[1].kill();
    await nextTick('a released replica killed');
    await stop(oldExecutors[2]);
    await more(30, 'the last released executor stopped');

    // The producers stop, the released one first; the window of occurrences checked closes.
    const stopProducer = async (p: NodeProcess) => {
      p.send({ stop: true });
      return (await p.waitFor<{ stopped: number }>((m) => m.stopped !== undefined)).stopped;
    };
    const submittedOld = await stopProducer(oldProducer);
    await more(30, 'the released producer stopped');
    const submittedNew = await stopProducer(newProducer);
    const windowEnd = Date.now();

    // Every occurrence in the window submitted (a killed replica's claims are taken over when they expire).
    const occurrences = async () => {
      const out = new Map<string, number[]>();
      for (const t of PERIODIC_TASKS) {
        const runs = await tasks.runs(t.id, { limit: 1000 });
        out.set(
          t.id,
          runs.filter((r) => r.occurrence >= windowStart && r.occurrence <= windowEnd).map((r) => r.occurrence),
        );
      }
      return out;
    };
    /** The window's occurrences of each task, once none is missing: one a period from its start to its end. */
    const complete = async () => {
      const all = await occurrences();
      for (const t of PERIODIC_TASKS) {
        const occ = [...new Set(all.get(t.id))].sort((a, b) => a - b);
        if (occ.length === 0 || occ[0] - windowStart >= t.periodMs || windowEnd - occ.at(-1)! >= t.periodMs) return null;
        if (occ.some((o, i) => i > 0 && o - occ[i - 1] !== t.periodMs)) return null;
      }
      return all;
    };
    const inWindow = await until('every occurrence of the window submitted', complete, { timeoutMs: 20_000 });
    for (const r of newReplicas) await stop(r);

    // Every job ends: nothing pending, then the new executors stop.
    const q = new Queue(queue, { connection: url });
    const errors = () => procs.flatMap((p) => p.received().flatMap((m) => (m.error === undefined ? [] : [m.error])));
    await until(
      'no job pending',
      async () => {
        const counts = await q.counts();
        return PENDING.every((s) => counts[s] === 0);
      },
      { timeoutMs: 20_000 },
    ).catch(async (err: Error) => {
      // (what is left, and why: a few of the jobs left and the errors the processes reported)
      const counts = await q.counts();
      const left = (await Promise.all(PENDING.map((state) => q.jobs({ state, limit: 2 })))).flat();
      const jobs = left.map((j) => `${j.id} (${j.state}, task ${j.task}, group ${j.group}: ${j.error ?? 'no error'})`);
      const pending = PENDING.filter((state) => counts[state] > 0).map((state) => `${counts[state]} ${state}`);
      throw new Error(`${err.message}: ${pending.join(', ')}, such as ${jobs.join('; ')}; ${errors().slice(0, 3).join('; ')}`);
    });

    // None lost: every acknowledged submit and every occurrence of the window ran, and ended success.
    const submitted = await admin.lrange(submittedKey(queue), 0, -1);
    expect(submitted.length).toBe(submittedOld + submittedNew);
    expect(new Set(submitted).size).toBe(submitted.length);
    const periodicIds = new Set<string>();
    for (const t of PERIODIC_TASKS) {
      const occ = inWindow.get(t.id)!;
      // exactly once: one run recorded an occurrence
      expect(new Set(occ).size, t.id).toBe(occ.length);
      for (const o of occ) periodicIds.add(`${t.id}@${o}`);
    }
    const runs = await readRuns(admin, queue);
    const ids = [...submitted, ...periodicIds];
    const fields = await jobFields(admin, queue, ids, ['state', 'takeSeq']);
    const finalSeq = new Map<string, number>();
    ids.forEach((id, i) => {
      expect(fields[i][0], `${id}'s state`).toBe('success');
      expect(runs.get(id)?.length ?? 0, `${id}'s runs`).toBeGreaterThan(0);
      finalSeq.set(id, Number(fields[i][1]));
    });
    for (const [id, list] of runs) if (!finalSeq.has(id)) finalSeq.set(id, list.at(-1)!.takeSeq);

    // None run twice but what the kill -9 held.
    const report = checkReruns(runs, faults, finalSeq);
    expect(report.duplicateTokens).toEqual([]);
    expect(report.unexplained).toEqual([]);

    // Both builds did the work, each on what the other wrote.
    const ranOn = (build: Build, prefix: string) =>
      [...runs.values()].flat().filter((e) => pids[build].has(e.pid) && e.id.startsWith(prefix)).length;
    expect(ranOn('old', 'new-')).toBeGreaterThan(0);
    expect(ranOn('new', 'old-')).toBeGreaterThan(0);
    expect(ranOn('new', 'every-')).toBeGreaterThan(0);
    expect(errors()).toEqual([]);

    // The upgrade's last step, where this build has one: the data migration, then the queue still works.
    const migrated = await migrateIfAny(url, queue);
    const after = await q.submit({ id: 'after-migrate', task: 'work', args: { ms: 1 } });
    await until('a job submitted after the upgrade runs', async () => (await q.getJob(after.id))?.state === 'success');
    expect((await q.getJob(submitted[0]))?.state).toBe('success');
    for (const e of newExecutors) await stop(e);

    const executions = [...runs.values()].reduce((n, l) => n + l.length, 0);
    console.log(
      `rolling upgrade from ${release.version}: ${submitted.length} jobs submitted (${submittedOld} by the released build, ${submittedNew} by the sources), ` +
        `${periodicIds.size} occurrences of ${PERIODIC_TASKS.length} periodic tasks, ${executions} executions, ` +
        `${report.reRuns} re-runs (of the ${held.size} jobs the executor killed held), ` +
        `run by the released build ${ranOn('old', '')}, by the sources ${ranOn('new', '')}; migration: ${migrated ?? 'none in this build'}`,
    );
    await q.close();
    await tasks.close();
  }, 120_000);
});
