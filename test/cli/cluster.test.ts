/**
 * The CLI on a Redis Cluster: `--redis` names one node, and every command reaches a sharded
 * queue whose shards sit on the three primaries (reads added up, a job in its shard, an executor
 * draining every shard, a scheduler replica, the dashboard); a cluster that lost a primary is
 * reported, not waited on.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { EXIT_INVALID, EXIT_UNREACHABLE } from '../../src/cli/exit-codes.js';
import { PeriodicTasks, Queue } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { BIN, rota, servedPage } from '../helpers/cli.js';
import { type LocalCluster, startCluster } from '../helpers/cluster.js';
import { textOf } from '../helpers/dashboard.js';
import { NodeProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/redis-server.js';
import { eventually } from '../helpers/setup.js';

const SHARDS = 3;
/** Two groups in each shard. */
const GROUPS = Array.from({ length: 100 }, (_, i) => `tenant-${i}`)
  .filter((g, _, all) => all.filter((o) => shardOfGroup(o, SHARDS) === shardOfGroup(g, SHARDS)).indexOf(g) < 2)
  .sort((a, b) => shardOfGroup(a, SHARDS) - shardOfGroup(b, SHARDS));

let cluster: LocalCluster;
let conn: Cluster;
let name = '';
/** The arguments every run starts with: a node that does not hold the queue's home shard. */
let q: string[] = [];
let queue: Queue;
/** Per group: 2 waiting jobs. */
const waiting: string[] = [];

beforeAll(async () => {
  cluster = await startCluster(3, 0);
  conn = new Cluster(cluster.startupNodes);
  // a queue whose three shards are on three different primaries
  for (let i = 0; !name; i++) {
    const candidate = `cli-cluster-${i}`;
    const owners = await Promise.all(
      Array.from({ length: SHARDS }, (_, s) => cluster.primaryOf(queueKeys(candidate, s, SHARDS).meta)),
    );
    if (new Set(owners).size === SHARDS) name = candidate;
  }
  const home = await cluster.primaryOf(queueKeys(name).meta);
  const node = cluster.nodes.find((n) => n !== home)!;
  q = ['--redis', `redis://127.0.0.1:${node.port}`, '--queue', name];
  queue = new Queue(name, { connection: conn, shards: SHARDS });
  for (const group of GROUPS)
    waiting.push(
      ...(
        await queue.submitBulk([
          { task: 'ok', group },
          { task: 'ok', group },
        ])
      ).map((j) => j.id),
    );
}, 60_000);

afterAll(async () => {
  await queue?.close();
  conn?.disconnect();
  await cluster?.destroy();
});

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('rota on a Redis Cluster', () => {
  it('reads over every shard from one node: stats, groups, jobs', async () => {
    const [stats, groups, jobs] = await Promise.all([
      rota([...q, 'stats', '--json']),
      rota([...q, 'groups', '--json']),
      rota([...q, 'jobs', '--state', 'waiting', '--limit', '100', '--json']),
    ]);
    expect(stats.code, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout).counts).toMatchObject({ waiting: waiting.length });
    expect(groups.code, groups.stderr).toBe(0);
    expect(lines(groups.stdout).map((g) => g.group)).toEqual([...GROUPS].sort());
    expect(
      lines(jobs.stdout)
        .map((j) => j.id)
        .sort(),
    ).toEqual([...waiting].sort());
  });

  it('reaches a job in its shard on another primary: job, cancel, retry', async () => {
    // (a group whose shard's primary is not the node --redis names)
    const here = Number(new URL(q[1]).port);
    const owners = await Promise.all(GROUPS.map((g) => cluster.primaryOf(queueKeys(name, shardOfGroup(g, SHARDS), SHARDS).meta)));
    const i = owners.findIndex((n) => n.port !== here);
    const id = waiting[i * 2];
    const job = await rota([...q, 'job', id, '--json']);
    expect(job.code, job.stderr).toBe(0);
    expect(JSON.parse(job.stdout)).toMatchObject({ id, group: GROUPS[i], state: 'waiting' });
    expect(await rota([...q, 'cancel', id])).toMatchObject({ code: 0, stdout: `${id} cancelled\n` });
    expect((await queue.getJob(id))?.state).toBe('cancelled');
    expect(await rota([...q, 'retry', id])).toMatchObject({ code: 0, stdout: `${id} waiting\n` });
  });

  it('runs an executor that drains every shard', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'tasks.mjs');
    writeFileSync(file, "export default { ok: async () => 'ok' };\n");
    const worker = new NodeProcess(BIN, [...q, 'worker', '--tasks', file, '--concurrency', '4']);
    try {
      await eventually(async () => (await queue.counts()).success === waiting.length, 20_000);
      const workers = await rota([...q, 'workers', '--json']);
      expect(lines(workers.stdout)).toEqual([expect.objectContaining({ pid: worker.pid, concurrency: 4 })]);
      worker.signal('SIGTERM');
      expect(await worker.exited).toBe(0);
    } finally {
      await worker.kill();
    }
  }, 30_000);

  it('runs a scheduler replica, and stops it', async () => {
    const tasks = new PeriodicTasks(name, { connection: conn, shards: SHARDS });
    const replica = new NodeProcess(BIN, [...q, 'scheduler', '--id', 'cluster-replica']);
    try {
      await eventually(async () => (await tasks.schedulers()).includes('cluster-replica'), 20_000);
      expect((await rota([...q, 'periodic', 'add', 'hourly', 'ok', 'every 1h'])).code).toBe(0);
      const list = await rota([...q, 'periodic', 'list', '--json']);
      expect(lines(list.stdout)).toEqual([expect.objectContaining({ id: 'hourly' })]);
      replica.signal('SIGTERM');
      expect(await replica.exited).toBe(0);
    } finally {
      await replica.kill();
      await tasks.close();
    }
  }, 30_000);

  it('serves the dashboard of the queue', async () => {
    const port = await freePort();
    const dashboard = new NodeProcess(BIN, [...q, 'dashboard', '--port', String(port)]);
    try {
      const page = await servedPage(port);
      expect(textOf(page)).toContain(`success ${waiting.length}`);
      dashboard.signal('SIGTERM');
      expect(await dashboard.exited).toBe(0);
    } finally {
      await dashboard.kill();
    }
  }, 30_000);

  it('reshards a queue over the cluster’s primaries from one node', async () => {
    const other = `${name}-reshard`;
    const before = new Queue(other, { connection: conn });
    const jobs = await before.submitBulk(GROUPS.map((group) => ({ task: 'ok', group })));
    await before.close();
    const r = await rota(['--redis', q[1], 'reshard', other, '--to', String(SHARDS)]);
    expect(r.code, r.stderr).toBe(0);
    const after = new Queue(other, { connection: conn, shards: SHARDS });
    try {
      expect((await after.counts()).waiting).toBe(jobs.length);
      for (const job of jobs) expect((await after.getJob(job.id))?.state).toBe('waiting');
    } finally {
      await after.close();
    }
  });

  it('refuses a database number, which a Cluster does not have', async () => {
    const r = await rota(['--redis', `${q[1]}/2`, '--queue', name, 'stats']);
    expect(r.code).toBe(EXIT_INVALID);
    expect(r.stderr).toContain('a Redis Cluster has database 0 only');
  });

  it('reports a cluster that lost a primary, at once (status 3)', async () => {
    const lost = cluster.nodes.find((n) => n.port !== Number(new URL(q[1]).port))!;
    await lost.kill();
    // (once the other nodes see the slots of the lost primary unserved)
    await eventually(async () => {
      const c = new Redis(q[1], { lazyConnect: true, maxRetriesPerRequest: 0 });
      try {
        return (await c.cluster('INFO')).includes('cluster_state:fail');
      } finally {
        c.disconnect();
      }
    });
    const r = await rota([...q, 'stats']);
    expect(r.code).toBe(EXIT_UNREACHABLE);
    expect(r.stderr).toContain(`cannot reach Redis at ${q[1]}: its Redis Cluster is down (cluster_state:fail`);
  });
});
