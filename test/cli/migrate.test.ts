/**
 * `rota migrate` migrates data: a test-only step (test/fixtures/migrate-step.ts) run by the CLI as
 * a child process, killed with kill -9 midway and started again while an executor works on the
 * queue, rewrites every record exactly once and nothing else; `--dry-run` writes nothing; a bad
 * `--to` is refused; a sharded queue migrates every shard. Child processes started and killed:
 * @full-suite
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_INVALID } from '../../src/cli/exit-codes.js';
import { migrateQueue } from '../../src/queue/migrate.js';
import { META, SCHEMA_VERSION } from '../../src/redis/wire.js';
import { TEST_STEP } from '../fixtures/migrate-step.js';
import { TS_EXEC_ARGV } from '../helpers/processes.js';
import { closeAll, openQueue, openWorker, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';
import { eventually } from '../helpers/wait.js';

afterEach(closeAll);

const CLI = new URL('../fixtures/migrate-cli.ts', import.meta.url).pathname;
const children = new Set<ChildProcess>();
afterEach(() => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
});

/** Starts the CLI with the test step; resolves its exit code and output when it ends. */
function startMigrate(args: string[]): {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, [...TS_EXEC_ARGV, CLI, '--redis', redisUrl(), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { child, done };
}

const FAR = Date.now() + 365 * 86_400_000;

/** Every field of each job hash of `ids` in queue `name`. */
async function jobHashes(name: string, ids: string[]): Promise<Array<Record<string, string>>> {
  const raw = rawClient();
  try {
    const out: Array<Record<string, string>> = [];
    for (let i = 0; i < ids.length; i += 1000) {
      const pipe = raw.pipeline();
      for (const id of ids.slice(i, i + 1000)) pipe.hgetall(`{rota:${name}}:j:${id}`);
      for (const [err, h] of (await pipe.exec()) ?? []) {
        if (err) throw err;
        out.push(h as Record<string, string>);
      }
    }
    return out;
  } finally {
    raw.disconnect();
  }
}

describe('rota migrate', () => {
  it('killed with kill -9 midway and started again, rewrites every record once and nothing else, while an executor works', async () => {
    const name = uniqueQueue('migrate');
    const queue = openQueue(name);
    const N = 20_000;
    const ids: string[] = [];
    for (let i = 0; i < N; i += 1000) {
      const jobs = await queue.submitBulk(
        Array.from({ length: 1000 }, (_, k) => ({ task: 'later', group: `g${(i + k) % 37}`, runAt: FAR })),
      );
      ids.push(...jobs.map((j) => j.id));
    }
    const before = await jobHashes(name, ids);

    // an executor of this build (schema SCHEMA_VERSION) works on the queue throughout
    const ran: string[] = [];
    openWorker(name, { live: async (ctx) => void ran.push(ctx.job.id) }, { keepSucceeded: { count: -1, age: -1 } });
    const live: string[] = [];
    let producing = true;
    const producer = (async () => {
      while (producing) {
        live.push((await queue.submit({ task: 'live', group: 'live' })).id);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();

    const raw = rawClient();
    const meta = `{rota:${name}}:meta`;
    try {
      const dry = startMigrate(['--queue', name, 'migrate', '--dry-run', '--json']);
      const dryOut = await dry.done;
      expect(dryOut.code).toBe(0);
      const plan = JSON.parse(dryOut.stdout);
      expect(plan).toMatchObject({
        dryRun: true,
        shards: [{ shard: 0, schema: String(SCHEMA_VERSION), after: String(TEST_STEP.to) }],
      });
      expect(plan.shards[0].steps).toHaveLength(1);
      expect(plan.shards[0].steps[0].keys).toBeGreaterThanOrEqual(N);
      expect(await raw.hgetall(meta)).toEqual({ [META.schema]: String(SCHEMA_VERSION), shards: '1' });
      expect(await raw.hexists(`{rota:${name}}:j:${ids[0]}`, 'g8')).toBe(0);

      const first = startMigrate(['--queue', name, 'migrate', '--batch', '20']);
      // kill -9 once a quarter of the records are rewritten (and the step's progress recorded)
      await eventually('a quarter migrated', async () => Number(await raw.hget(meta, META.done)) >= N / 4 || undefined, {
        timeoutMs: 60_000,
        intervalMs: 5,
      });
      first.child.kill('SIGKILL');
      const killed = await first.done;
      expect(killed.signal).toBe('SIGKILL');
      const halfway = await raw.hgetall(meta);
      expect(halfway[META.step]).toBe(String(TEST_STEP.to));
      expect(halfway[META.schema]).toBe(String(SCHEMA_VERSION));
      expect(Number(halfway[META.done])).toBeLessThan(N);

      const second = startMigrate(['--queue', name, 'migrate', '--batch', '50', '--json']);
      const out = await second.done;
      expect(out.code).toBe(0);
      const report = JSON.parse(out.stdout);
      expect(report.shards[0]).toMatchObject({
        resumed: TEST_STEP.to,
        schema: String(SCHEMA_VERSION),
        after: String(TEST_STEP.to),
      });
      const progress = out.stderr
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(progress.at(-1)).toMatchObject({ shard: 0, from: TEST_STEP.from, to: TEST_STEP.to, complete: true });

      producing = false;
      await producer;
      const final = await raw.hgetall(meta);
      expect(final).toEqual({ [META.schema]: String(TEST_STEP.to), [META.compat]: String(TEST_STEP.compat), shards: '1' });

      // every record rewritten exactly once: each has g8, its group; nothing else of it changed;
      // and the step counted one rewrite per job hash that has g8 (none counted twice)
      const after = await jobHashes(name, ids);
      for (let i = 0; i < N; i++) expect(after[i]).toEqual({ ...before[i], g8: before[i].group });
      const liveHashes = await jobHashes(name, live);
      const liveMigrated = liveHashes.filter((h) => 'g8' in h).length;
      expect(report.shards[0].steps[0].rewritten).toBe(N + liveMigrated);
      for (const h of liveHashes.filter((x) => 'g8' in x)) expect(h.g8).toBe('live');

      // the executor of the old schema kept working, and reads the migrated queue: every live job ran once
      await eventually('the live jobs ran', () => ran.length >= live.length || undefined, 20_000);
      expect(new Set(ran).size).toBe(ran.length);
      expect(new Set(ran)).toEqual(new Set(live));
      const late = await openQueue(name).submit({ task: 'live', group: 'live' });
      await eventually('a job submitted after the migration ran', () => ran.includes(late.id) || undefined, 20_000);
      expect((await queue.getJob(ids[0]))?.state).toBe('delayed');

      // migrated already: nothing to do
      const again = startMigrate(['--queue', name, 'migrate']);
      const againOut = await again.done;
      expect(againOut.code).toBe(0);
      expect(againOut.stdout).toContain(`queue ${name}: schema ${TEST_STEP.to}, nothing to migrate\n`);
    } finally {
      producing = false;
      await producer;
      raw.disconnect();
    }
  }, 180_000);

  it('refuses a --to no step leads to, writing nothing', async () => {
    const name = uniqueQueue('migrate');
    await openQueue(name).submit({ task: 't' });
    const run = startMigrate(['--queue', name, 'migrate', '--to', String(TEST_STEP.to + 1)]);
    const out = await run.done;
    expect(out.code).toBe(EXIT_INVALID);
    expect(out.stderr).toContain(`--to: this Rota migrates to schema ${TEST_STEP.to} at most (asked: ${TEST_STEP.to + 1})`);
    const raw = rawClient();
    try {
      expect(await raw.hget(`{rota:${name}}:meta`, META.schema)).toBe(String(SCHEMA_VERSION));
    } finally {
      raw.disconnect();
    }
  });

  it('migrates every shard of a sharded queue', async () => {
    const name = uniqueQueue('migrate');
    const queue = openQueue(name, { shards: 3 });
    const jobs = await queue.submitBulk(Array.from({ length: 300 }, (_, i) => ({ task: 't', group: `g${i}`, runAt: FAR })));
    const raw = rawClient();
    try {
      const reports = await migrateQueue(raw, name, { steps: [TEST_STEP], batch: 7 });
      // (shards 0 to 2, and the home shard 3, whose tag is the unsharded queue's)
      expect(reports.map((r) => r.shard)).toEqual([0, 1, 2, 3]);
      expect(reports.reduce((n, r) => n + (r.steps[0]?.rewritten ?? 0), 0)).toBe(300);
      for (const tag of [0, 1, 2].map((s) => `${name}:${s}`).concat(name)) {
        const schema = await raw.hget(`{rota:${tag}}:meta`, META.schema);
        if (tag !== name || schema !== null) expect(schema).toBe(String(TEST_STEP.to));
      }
      for (const job of jobs) expect((await queue.getJob(job.id))?.group).toBe(job.group);
    } finally {
      raw.disconnect();
    }
  });
});
