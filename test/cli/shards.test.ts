/**
 * The CLI on a sharded queue: it reads the shard count from the queue's layout when `--shards`
 * is not given, `--shards` (or ROTA_SHARDS) overrides it and a count the queue does not have is
 * refused, and every command adds up or reaches across the shards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { PeriodicTasks, Queue, Scheduler } from '../../src/index.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { BIN, rota, servedPage } from '../helpers/cli.js';
import { textOf } from '../helpers/dashboard.js';
import { NodeProcess } from '../helpers/processes.js';
import { eventually, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

const SHARDS = 3;
/** Two groups in each shard. */
const GROUPS = Array.from({ length: 100 }, (_, i) => `tenant-${i}`)
  .filter((g, _, all) => all.filter((o) => shardOfGroup(o, SHARDS) === shardOfGroup(g, SHARDS)).indexOf(g) < 2)
  .sort((a, b) => shardOfGroup(a, SHARDS) - shardOfGroup(b, SHARDS));

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe('rota on a sharded queue', () => {
  const name = uniqueQueue('cli-shards');
  const q = ['--redis', redisUrl(), '--queue', name];
  let queue: Queue;
  let tasks: PeriodicTasks;
  let scheduler: Scheduler;
  /** Per group: 3 waiting jobs and 1 cancelled. */
  const waiting: string[] = [];
  const cancelled: string[] = [];
  let run = '';

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl(), shards: SHARDS });
    tasks = new PeriodicTasks(name, { connection: redisUrl(), shards: SHARDS });
    for (const group of GROUPS) {
      const jobs = await queue.submitBulk(Array.from({ length: 4 }, () => ({ task: 'work', group })));
      waiting.push(...jobs.slice(0, 3).map((j) => j.id));
      await queue.cancel(jobs[3].id);
      cancelled.push(jobs[3].id);
    }
    // A periodic run of the first group, in the home shard.
    await tasks.upsert({ id: 'nightly', task: 'work', group: GROUPS[0], timer: 'every 1h' });
    scheduler = new Scheduler(name, { connection: redisUrl(), shards: SHARDS });
    await scheduler.start();
    await tasks.trigger('nightly');
    run = (await eventually(async () => (await tasks.runs('nightly')).find((r) => r.status === 'waiting'))).jobId!;
    waiting.push(run);
  });

  afterAll(async () => {
    await scheduler?.close();
    await tasks?.close();
    await queue?.close();
  });

  it('reads the count from the layout: stats, groups and jobs add up over every shard', async () => {
    const stats = await rota([...q, 'stats', '--json']);
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout).counts).toMatchObject({ waiting: waiting.length, cancelled: cancelled.length });

    const groups = (await rota([...q, 'groups', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { group: string; waiting: number });
    expect(groups.map((g) => g.group)).toEqual([...GROUPS].sort());
    // (the first group's periodic run, in the home shard, counts with its jobs)
    expect(groups.find((g) => g.group === GROUPS[0])?.waiting).toBe(4);

    const jobs = (await rota([...q, 'jobs', '--state', 'waiting', '--limit', '1000', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { id: string }).id);
    expect(jobs.sort()).toEqual([...waiting].sort());
    const ended = (await rota([...q, 'jobs', '--state', 'cancelled', '--json'])).stdout.trim().split('\n');
    expect(ended).toHaveLength(cancelled.length);
  });

  it('reaches a job in its shard: job, cancel, retry; pauses a group in its shard and the home shard', async () => {
    const last = GROUPS.at(-1)!;
    expect(shardOfGroup(last, SHARDS)).toBe(2);
    const id = (await rota([...q, 'submit', 'work', '--group', last])).stdout.trim();
    expect((await queue.getJob(id))?.group).toBe(last);
    expect(JSON.parse((await rota([...q, 'job', id, '--json'])).stdout)).toMatchObject({ id, group: last, state: 'waiting' });
    expect(await rota([...q, 'cancel', id])).toMatchObject({ code: 0, stdout: `${id} cancelled\n` });
    expect(await rota([...q, 'retry', id])).toMatchObject({ code: 0, stdout: `${id} waiting\n` });
    expect(await rota([...q, 'cancel', id])).toMatchObject({ code: 0 });
    cancelled.push(id);
    expect(JSON.parse((await rota([...q, 'job', run, '--json'])).stdout)).toMatchObject({ id: run, tracker: 'nightly' });

    expect((await rota([...q, 'pause-group', GROUPS[0]])).code).toBe(0);
    expect((await queue.groups()).find((g) => g.group === GROUPS[0])).toMatchObject({ paused: true, waiting: 4 });
    const redis = rawClient();
    try {
      // its own shard's record and the home shard's (its periodic runs follow its settings)
      const home = queue.shardKeys.at(-1)!;
      expect(await redis.hexists(queue.shardKeys[0].groups, GROUPS[0])).toBe(1);
      expect(await redis.hexists(home.groups, GROUPS[0])).toBe(1);
    } finally {
      redis.disconnect();
    }
    expect((await rota([...q, 'resume-group', GROUPS[0]])).code).toBe(0);

    const periodic = await rota([...q, 'periodic', 'list', '--json']);
    expect(periodic.code, periodic.stderr).toBe(0);
    expect(periodic.stdout).toContain('"nightly"');
  });

  it('runs a scheduler replica with the count it reads', async () => {
    const replica = new NodeProcess(BIN, [...q, 'scheduler', '--id', 'cli-replica']);
    try {
      await eventually(async () => (await tasks.schedulers()).includes('cli-replica'), 20_000);
      replica.signal('SIGTERM');
      expect(await replica.exited).toBe(0);
    } finally {
      await replica.kill();
    }
  });

  it('cleans across every shard', async () => {
    const clean = await rota([...q, 'clean', '--state', 'cancelled']);
    expect(clean).toMatchObject({ code: 0, stdout: `${cancelled.length} cancelled jobs removed\n` });
    expect((await queue.counts()).cancelled).toBe(0);
  });

  it('--shards (or ROTA_SHARDS) is checked against the layout: a count the queue does not have is refused', async () => {
    expect((await rota([...q, '--shards', '3', 'stats'])).code).toBe(0);
    const wrong = await rota([...q, '--shards', '2', 'stats']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`queue "${name}" has 3 shards, but this part of Rota is configured with shards: 2`);
    const env = await rota([...q, 'groups'], { ROTA_SHARDS: '1' });
    expect(env.code).toBe(1);
    expect(env.stderr).toContain('configured with shards: 1');
    const bad = await rota([...q, '--shards', '0', 'stats']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--shards must be a whole number from 1 to 1024/);
  });

  it('lays out a new queue with --shards, and reads it back after', async () => {
    const fresh = ['--redis', redisUrl(), '--queue', uniqueQueue('cli-shards')];
    const id = (await rota([...fresh, '--shards', '4', 'submit', 'work', '--group', 'g'])).stdout.trim();
    const stats = await rota([...fresh, 'stats', '--json']);
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout).counts.waiting).toBe(1);
    expect(JSON.parse((await rota([...fresh, 'job', id, '--json'])).stdout)).toMatchObject({ id, state: 'waiting' });
  });

  it('serves the dashboard of the sharded queue with the count it reads', async () => {
    const port = await freePort();
    const dashboard = new NodeProcess(BIN, [...q, 'dashboard', '--port', String(port)]);
    try {
      const page = await servedPage(port);
      const counts = await queue.counts();
      expect(textOf(page)).toContain(`waiting ${counts.waiting}`);
    } finally {
      dashboard.signal('SIGTERM');
      await dashboard.exited;
    }
  });

  it('runs an executor on every shard with the count it reads; workers and retry --all-failed cover every shard', async () => {
    const other = uniqueQueue('cli-shards');
    const o = ['--redis', redisUrl(), '--queue', other];
    const dir = mkdtempSync(join(tmpdir(), 'rota-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'tasks.mjs');
    writeFileSync(file, "export default { ok: async () => 'ok', bad: async () => { throw new Error('no'); } };\n");
    const sharded = new Queue(other, { connection: redisUrl(), shards: SHARDS });
    try {
      const oks = await sharded.submitBulk(GROUPS.map((group) => ({ task: 'ok', group })));
      const bads = await sharded.submitBulk(GROUPS.map((group) => ({ task: 'bad', group, maxRetries: 0 })));
      const worker = new NodeProcess(BIN, [...o, 'worker', '--tasks', file, '--concurrency', '4']);
      try {
        await eventually(async () => {
          const c = await sharded.counts();
          return c.success === oks.length && c.failed === bads.length;
        }, 30_000);
        const workers = (await rota([...o, 'workers', '--json'])).stdout.trim().split('\n');
        expect(workers).toHaveLength(1);
        expect(JSON.parse(workers[0])).toMatchObject({ pid: worker.pid, concurrency: 4 });
        worker.signal('SIGTERM');
        expect(await worker.exited).toBe(0);
      } finally {
        await worker.kill();
      }
      const retried = await rota([...o, 'retry', '--all-failed']);
      expect(retried).toMatchObject({ code: 0, stdout: `${bads.length} failed jobs put back as waiting\n` });
      expect((await sharded.counts()).waiting).toBe(bads.length);
    } finally {
      await sharded.close();
    }
  }, 60_000);
});
