/**
 * The processes in view: `rota schedulers` and the dashboard's executors page list two real
 * scheduler replicas (child processes) with their host, pid, start, last beat, claims and
 * lateness; `rota workers` shows the jobs an executor holds now, not as of its last heartbeat.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { dashboard } from '../../src/dashboard/index.js';
import { PeriodicTasks } from '../../src/index.js';
import { rota } from '../helpers/cli.js';
import { textOf } from '../helpers/dashboard.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, openQueue, openWorker, redisUrl, uniqueQueue } from '../helpers/setup.js';

const CHILD = new URL('../fixtures/scheduler-replica.ts', import.meta.url).pathname;
const procs: NodeProcess[] = [];
afterAll(async () => {
  for (const p of procs) await p.kill();
  await closeAll();
});

async function replica(name: string, id: string): Promise<NodeProcess> {
  const p = new NodeProcess(CHILD, [redisUrl(), name, id]);
  procs.push(p);
  await p.waitFor((m) => m.ready);
  return p;
}

interface Listed {
  id: string;
  host: string;
  pid: number;
  started: number;
  lastBeat: number;
  expires: number;
  claims: number;
  claimed: number;
  released: number;
  lateMs: number | null;
  maxLateMs: number | null;
}

async function listed(q: string[]): Promise<Listed[]> {
  const r = await rota([...q, 'schedulers', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Listed);
}

describe('scheduler replicas in view', () => {
  it('rota schedulers and the dashboard list two real replicas with their claims and lateness; a closed one leaves the list', async () => {
    const name = uniqueQueue('reps');
    const q = ['--redis', redisUrl(), '--queue', name];
    const none = await rota([...q, 'schedulers']);
    expect(none.code).toBe(0);
    expect(none.stderr).toMatch(/no scheduler replica is running/);

    const tasks = new PeriodicTasks(name, { connection: redisUrl() });
    onTestFinished(() => tasks.close());
    await tasks.upsert({ id: 'tick', task: 'noop', timer: 'every 1s', overlap: 'allow' });
    const started = Date.now();
    const a = await replica(name, 'rep-a');
    const b = await replica(name, 'rep-b');

    // Each replica writes its record at its beat (every 5 s): wait for beats that report releases.
    const both = await eventually(async () => {
      const l = await listed(q);
      return l.length === 2 && l.some((r) => r.released > 0 && r.lateMs !== null) && l.every((r) => r.claimed > 0) ? l : null;
    }, 40_000);
    expect(both.map((r) => r.id)).toEqual(['rep-a', 'rep-b']);
    expect(both.map((r) => r.pid)).toEqual([a.pid, b.pid]);
    for (const r of both) {
      expect(r.host).toBe(hostname());
      expect(r.started).toBeGreaterThanOrEqual(started - 1000);
      expect(r.lastBeat).toBeGreaterThan(r.started - 1000);
      expect(r.expires).toBeGreaterThan(r.lastBeat);
      expect(r.claims).toBeGreaterThanOrEqual(0);
    }
    const releasing = both.find((r) => r.lateMs !== null)!;
    expect(releasing.lateMs).toBeGreaterThanOrEqual(0);
    expect(releasing.maxLateMs).toBeGreaterThanOrEqual(releasing.lateMs!);
    // The released occurrences are the jobs the queue holds (each submitted once, by one replica).
    const queue = openQueue(name);
    const submitted = (await queue.counts()).waiting;
    expect(both.reduce((n, r) => n + r.released, 0)).toBeLessThanOrEqual(submitted);

    const table = await rota([...q, 'schedulers']);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^ID\s+HOST\s+PID\s+STARTED\s+LAST BEAT\s+CLAIMS\s+CLAIMED\s+RELEASED\s+LATE\s+MAX LATE 1M$/,
    );
    expect(table.stdout).toMatch(new RegExp(`rep-a\\s+${hostname()}\\s+${a.pid}\\s`));

    const handler = dashboard({ connection: redisUrl(), queues: [name] });
    const server = createServer((req, res) => handler(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    onTestFinished(async () => {
      await new Promise((r) => server.close(r));
      await handler.close();
    });
    const page = await (await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/executors`)).text();
    expect(page).toContain('data-replica="rep-a"');
    expect(page).toContain('data-replica="rep-b"');
    expect(textOf(page)).toMatch(new RegExp(`Scheduler replicas 2 live .* rep-a ${hostname()} ${a.pid} `));

    // A replica that closes removes its entry and record at once.
    b.send({ close: true });
    await b.exited;
    expect((await listed(q)).map((r) => r.id)).toEqual(['rep-a']);
  }, 90_000);
});

describe('rota workers', () => {
  it('shows the job an executor holds now, though its last heartbeat was before the take', async () => {
    const name = uniqueQueue('held');
    const q = ['--redis', redisUrl(), '--queue', name];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // A 60 s lease: the heartbeat at start precedes the take, and the next one is 20 s later.
    const worker = openWorker(name, { hold: () => held }, { leaseMs: 60_000, concurrency: 2 });
    await worker.run();
    onTestFinished(() => release());
    const queue = openQueue(name);
    const idle = await rota([...q, 'workers', '--json']);
    expect(JSON.parse(idle.stdout)).toMatchObject({ id: worker.id, running: 0, jobs: [] });
    const job = await queue.submit({ task: 'hold', group: 'g' });
    await eventually(async () => (await queue.getJob(job.id))?.state === 'running');

    const shown = await rota([...q, 'workers', '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: worker.id, concurrency: 2, running: 1, jobs: [job.id] });
    const table = await rota([...q, 'workers']);
    expect(table.stdout.split('\n')[0]).toMatch(/RUNNING\s+JOBS$/);
    expect(table.stdout).toMatch(new RegExp(`\\s1\\s+${job.id.replace(/\./g, '\\.')}\\n`));
    release();
    await eventually(async () => (await queue.getJob(job.id))?.state === 'success');
    expect(JSON.parse((await rota([...q, 'workers', '--json'])).stdout)).toMatchObject({ running: 0, jobs: [] });
  }, 60_000);
});
