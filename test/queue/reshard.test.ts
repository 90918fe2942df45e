/** Changing a queue's shard count (reshard): jobs in every state move to their shards and stay as they were. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_INVALID } from '../../src/cli/exit-codes.js';
import {
  type Job,
  Queue,
  ReshardInProgressError,
  ReshardRefusedError,
  reshard,
  ShardCountError,
  ValidationError,
} from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { type JobSet, ReshardStore } from '../../src/redis/reshard-store.js';
import { shardOfGroup, shardOfId } from '../../src/redis/shards.js';
import { executorScript } from '../fixtures/chaos.js';
import { rota } from '../helpers/cli.js';
import { NodeProcess } from '../helpers/processes.js';
import { audit, KIDS, populate, type Snapshot, snapshot } from '../helpers/reshard.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

const raw = rawClient();
afterAll(() => raw.disconnect());
afterEach(closeAll);

const RESHARD_SCRIPT = new URL('../fixtures/reshard.ts', import.meta.url).pathname;

/** Every key of queue `name` with its DUMP: what a refused reshard must leave as it was. */
async function dump(name: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await raw.scan(cursor, 'MATCH', `{rota:${name}*`, 'COUNT', 1000);
    for (const key of keys) out.set(key, (await raw.dumpBuffer(key)).toString('hex'));
    cursor = next;
  } while (cursor !== '0');
  return out;
}

/** A fresh queue filled by {@link populate}, and its snapshot. */
async function filled(label: string): Promise<{ name: string; before: Snapshot }> {
  const name = uniqueQueue(label);
  const ids = await populate(name);
  return { name, before: await snapshot(name, 1, ids, raw) };
}

describe('reshard', () => {
  let name: string;
  let before: Snapshot;
  beforeAll(async () => {
    ({ name, before } = await filled('reshard'));
  });

  it('moves jobs in every state from 1 to 4, 2, 4 again, 2 and back to 1 shard, each where its id, parent or group puts it, as it was', async () => {
    for (const [from, to] of [
      [1, 4],
      [4, 2],
      [2, 4],
      [4, 2],
      [2, 1],
    ]) {
      const report = await reshard(redisUrl(), name, { to, batch: 7 });
      expect(report).toMatchObject({
        from,
        to,
        resumed: false,
        recovered: 0,
        dropped: to >= from ? 0 : to === 1 ? from : from - to,
      });
      expect(report.moved).toBeGreaterThan(0);
      await audit(name, to, before, raw);
    }
    // a reshard to the count the queue has does nothing
    const same = await dump(name);
    expect(await reshard(redisUrl(), name, { to: 1 })).toMatchObject({ from: 1, to: 1, moved: 0, resumed: false });
    expect(await dump(name)).toEqual(same);
  });

  it("leaves the jobs to executors of the new count: each waiting job runs once, under its group's settings (a limit, a rate whose log came along)", async () => {
    const q = await filled('reshard-run');
    await reshard(redisUrl(), q.name, { to: 4, batch: 7 });
    await reshard(redisUrl(), q.name, { to: 3, batch: 7 });
    await audit(q.name, 3, q.before, raw);
    const queue = openQueue(q.name, { shards: 3 });
    await queue.resumeGroup(KIDS);
    const ran: Job[] = [];
    const busy = new Map<string, number>();
    let most = 0;
    const handler = async (ctx: { job: Job }) => {
      ran.push(ctx.job);
      const g = ctx.job.group;
      busy.set(g, (busy.get(g) ?? 0) + 1);
      if (g === 'tenant-1') most = Math.max(most, busy.get(g)!);
      await new Promise((r) => setTimeout(r, 5));
      busy.set(g, busy.get(g)! - 1);
    };
    const handlers = { work: handler, child: handler, ok: handler, hang: handler };
    for (let i = 0; i < 2; i++) openWorker(q.name, handlers, { shards: 3, concurrency: 4 });
    const waiting = [...q.before.jobs.values()].filter((j) => j.state === 'waiting');
    // tenant-3's rate is 5 starts an hour, and the starts before the move count (its log came along)
    const rated = waiting.filter((j) => j.group === 'tenant-3');
    const more = 5 - [...q.before.jobs.values()].filter((j) => j.group === 'tenant-3' && j.started).length;
    expect(more).toBeGreaterThan(0);
    expect(rated.length).toBeGreaterThan(more);
    const runnable = waiting.length - (rated.length - more);
    await eventually(async () => ran.length >= runnable, 30_000);
    expect(new Set(ran.map((j) => j.id)).size).toBe(ran.length);
    expect(ran.every((j) => q.before.jobs.get(j.id)?.state === 'waiting')).toBe(true);
    expect(ran.filter((j) => j.group === 'tenant-3').length).toBe(more);
    expect(most).toBeLessThanOrEqual(2);
    await eventually(async () => (await queue.counts()).success === q.before.counts.success + runnable);
    expect(await queue.counts()).toMatchObject({
      waiting: rated.length - more,
      delayed: q.before.counts.delayed,
      stuck: q.before.counts.stuck,
      running: 0,
      scheduled: 0,
    });
  });

  it('is killed (kill -9) at any point and run again to completion, with no job lost or doubled; meanwhile the queue is refused to every other client', async () => {
    const q = await filled('reshard-kill');
    for (const to of [4, 1]) {
      for (let kill = 0; kill < 3; kill++) {
        const child = new NodeProcess(RESHARD_SCRIPT, [], { REDIS_URL: redisUrl(), QUEUE: q.name, TO: String(to), BATCH: '5' });
        // (killed as the first step of this run is reported: the next one is under way)
        await child.waitFor((m) => m.type === 'moved' || m.type === 'done' || m.type === 'error');
        await child.kill();
        expect(child.received().find((m) => m.type === 'error')).toBeUndefined();
        // (unless the kill came after its last step)
        const [shards, underway] = await raw.hmget(`{rota:${q.name}}:meta`, 'shards', 'reshard');
        if (underway === null) {
          expect(shards).toBe(String(to));
          break;
        }
        expect(underway).toBe(String(to));
        const other = new Queue(q.name, { connection: redisUrl(), shards: to });
        await expect(other.submit({ task: 'x' })).rejects.toBeInstanceOf(ReshardInProgressError);
        await other.close();
        const elsewhere = reshard(redisUrl(), q.name, { to: to + 1 });
        await expect(elsewhere).rejects.toBeInstanceOf(ReshardRefusedError);
        await expect(elsewhere).rejects.toMatchObject({ reason: 'underway' });
      }
      const last = await reshard(redisUrl(), q.name, { to, batch: 5 });
      expect(last.to).toBe(to);
      await audit(q.name, to, q.before, raw);
    }
  });

  it('refuses reads of a queue whose reshard was killed, under either shard count, from the library and the CLI', async () => {
    const name = uniqueQueue('reshard-reads');
    const producer = openQueue(name);
    await producer.submitBulk(Array.from({ length: 300 }, (_, i) => ({ task: 'x', group: `tenant-${i % 24}` })));
    const child = new NodeProcess(RESHARD_SCRIPT, [], { REDIS_URL: redisUrl(), QUEUE: name, TO: '4', BATCH: '5' });
    await child.waitFor((m) => m.type === 'moved' || m.type === 'done' || m.type === 'error');
    await child.kill();
    expect(await raw.hget(`{rota:${name}}:meta`, 'reshard')).toBe('4');
    for (const shards of [1, 4]) {
      const q = openQueue(name, { shards });
      for (const read of [
        () => q.counts(),
        () => q.stats(),
        () => q.jobs({ state: 'waiting', limit: 1000 }),
        () => q.workers(),
        () => q.groups(),
        () => q.getJob('any'),
        () => q.jobLogs('any'),
      ]) {
        await expect(read()).rejects.toBeInstanceOf(ReshardInProgressError);
      }
    }
    const args = ['--redis', redisUrl(), '--queue', name];
    for (const command of [['stats'], ['jobs', '--state', 'waiting'], ['workers']]) {
      const r = await rota([...args, ...command]);
      expect(r).toMatchObject({ code: EXIT_INVALID, stdout: '' });
      expect(r.stderr).toMatch(/is being resharded from 1 to 4 shards/);
    }
    // finished, the queue answers with every job
    await reshard(redisUrl(), name, { to: 4 });
    expect((await openQueue(name, { shards: 4 }).counts()).waiting).toBe(300);
  });

  it('finishes what a killed run took out of a shard, whether it was copied to its destination or not, without doubling it', async () => {
    const q = await filled('reshard-moving');
    // As the command does, up to the point it is killed: the reshard recorded, two batches out of
    // the home shard (one copied to its destinations, the other not), nothing forgotten.
    await raw.hset(`{rota:${q.name}}:meta`, 'reshard', '4');
    const home = new ReshardStore(new QueueStore(raw, q.name, { maxEvents: 0, resharding: true }));
    const dest = (d: number) =>
      new ReshardStore(new QueueStore(raw, q.name, { maxEvents: 0, shard: d, shards: 4, resharding: true }));
    const to = (job: Job) => ({ id: job.id, dest: shardOfId(job.id, 4) ?? shardOfGroup(job.group, 4) });
    const done = (state: JobSet) => [...q.before.jobs.values()].filter((j) => `done:${j.state}` === state && !j.tracker);
    const out = await home.outSet('done:success', done('done:success').map(to));
    expect(out.status).toBe('taken');
    for (const job of out.jobs) {
      const fields = Object.entries(await raw.hgetallBuffer(queueKeys(q.name).job(job.id))).flatMap(([f, v]) => [
        Buffer.from(f),
        v,
      ]);
      const logs = await raw.lrangeBuffer(queueKeys(q.name).logs(job.id), 0, -1);
      expect(await dest(job.dest).in([{ ...job, fields, logs, attempts: [] }])).toEqual({ added: 1, held: [] });
    }
    // (a second take-out while the first is not forgotten takes nothing and answers the first)
    const again = await home.outSet('done:failed', done('done:failed').map(to));
    expect(again).toEqual({ status: 'pending', jobs: out.jobs });
    const report = await reshard(redisUrl(), q.name, { to: 4, batch: 5 });
    expect(report.resumed).toBe(true);
    await audit(q.name, 4, q.before, raw);

    // Taken out and not copied at all.
    await raw.hset(`{rota:${q.name}}:meta`, 'reshard', '1');
    const shard = (s: number) =>
      new ReshardStore(new QueueStore(raw, q.name, { maxEvents: 0, shard: s, shards: 4, resharding: true }));
    const delayed = [...q.before.jobs.values()].filter((j) => j.state === 'delayed');
    const taken = await shard(shardOfId(delayed[0].id, 4)!).outSet('delayed', [{ id: delayed[0].id, dest: 0 }]);
    expect(taken.jobs.map((j) => j.id)).toEqual([delayed[0].id]);
    expect((await reshard(redisUrl(), q.name, { to: 1 })).resumed).toBe(true);
    await audit(q.name, 1, q.before, raw);
  });

  it('run again at its last step, moves the jobs a producer left running added after the move', async () => {
    const name = uniqueQueue('reshard-late');
    const queue = openQueue(name, { shards: 3 });
    const early = await queue.submitBulk(['a', 'b', 'c', 'd', 'e'].map((group) => ({ task: 't', group })));
    await reshard(redisUrl(), name, { to: 2 });
    // As if killed at its last step, with jobs in the old shards that a producer left running
    // (with the old count) wrote after the move.
    await raw.hset(`{rota:${name}}:meta`, 'shards', '3');
    const late = await openQueue(name, { shards: 3 }).submitBulk([
      { task: 't', group: 'f' },
      { task: 't', group: 'z' },
      { id: 'late-1', task: 't', group: 'g', delay: 60_000 },
    ]);
    await raw.hset(`{rota:${name}}:meta`, 'reshard', '2', 'reshardStep', 'tidying');
    const report = await reshard(redisUrl(), name, { to: 2 });
    expect(report).toMatchObject({ resumed: true, from: 3, to: 2, dropped: 1 });
    const two = openQueue(name, { shards: 2 });
    for (const job of [...early, ...late]) {
      const shard = shardOfId(job.id, 2) ?? shardOfGroup(job.group, 2);
      expect(await raw.exists(two.shardKeys[shard].job(job.id)), job.id).toBe(1);
      expect((await two.getJob(job.id))?.state).toBe(job.state);
    }
    expect(await two.counts()).toMatchObject({ waiting: 7, delayed: 1 });
  });

  it('refuses, writing nothing, while an executor is live or a run is in progress', async () => {
    const name = uniqueQueue('reshard-busy');
    const queue = openQueue(name);
    let started: (() => void) | undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    const worker = openWorker(name, {
      hang: async (ctx) => {
        started?.();
        await new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
      },
    });
    const job = await queue.submit({ task: 'hang', group: 'a' });
    await queue.submit({ task: 'hang', group: 'b', delay: 60_000 });
    await running;
    const refused = async (reason: string) => {
      const was = await dump(name);
      const attempt = reshard(redisUrl(), name, { to: 2 });
      await expect(attempt).rejects.toBeInstanceOf(ReshardRefusedError);
      await expect(attempt).rejects.toMatchObject({ reason, message: expect.stringContaining('nothing was written') });
      // (the executor's heartbeat writes its registry entry and leases meanwhile)
      const moving = (k: string) => !/}:(workers|w:|leases)/.test(k);
      expect(new Map([...(await dump(name))].filter(([k]) => moving(k)))).toEqual(new Map([...was].filter(([k]) => moving(k))));
    };
    await refused('executors');
    // A run whose executor has left the registry, its lease not expired yet.
    await raw.zrem(queueKeys(name).workers, worker.id);
    await refused('runs');
    await worker.close({ timeout: 50 });
    expect((await queue.getJob(job.id))?.state).toBe('waiting');
    const report = await reshard(redisUrl(), name, { to: 2 });
    expect(report).toMatchObject({ from: 1, to: 2, moved: 2, recovered: 0 });
    const sharded = openQueue(name, { shards: 2 });
    expect((await sharded.getJob(job.id))?.state).toBe('waiting');
    expect((await sharded.counts()).delayed).toBe(1);
  });

  it('ends the runs of a killed executor as failed attempts once its registry entry expired, then moves them', async () => {
    const name = uniqueQueue('reshard-dead');
    const queue = openQueue(name);
    const child = new NodeProcess(executorScript(), [], {
      REDIS_URL: redisUrl(),
      QUEUE: name,
      LEASE_MS: '1000',
      RETRY_DELAY: '60000',
      REPORT: '1',
    });
    try {
      await child.waitFor((m) => m.type === 'ready');
      const job = await queue.submit({ task: 'hang', group: 'a', maxRetries: 2 });
      await child.waitFor((m) => m.type === 'started' && m.id === job.id);
      await child.kill();
      await expect(reshard(redisUrl(), name, { to: 3 })).rejects.toMatchObject({ reason: 'executors' });
      await eventually(async () => (await queue.workers()).length === 0);
      const report = await reshard(redisUrl(), name, { to: 3 });
      expect(report).toMatchObject({ recovered: 1, moved: 1 });
      const sharded = openQueue(name, { shards: 3 });
      expect(await sharded.getJob(job.id)).toMatchObject({
        state: 'stuck',
        retries: 1,
        error: expect.stringContaining('lease expired'),
      });
      expect(await sharded.counts()).toMatchObject({ stuck: 1, running: 0, scheduled: 0 });
    } finally {
      await child.kill();
    }
  });

  it('refuses, writing nothing, two jobs of one caller-given id that would meet in one shard', async () => {
    const name = uniqueQueue('reshard-ids');
    // (groups in two shards: a caller's id is unique within a shard only)
    const a = 'a';
    const b = ['b', 'c', 'd', 'e', 'f'].find((g) => shardOfGroup(g, 2) !== shardOfGroup(a, 2))!;
    const queue = openQueue(name, { shards: 2 });
    await queue.submit({ id: 'invoice-1', task: 't', group: a });
    await queue.submit({ id: 'invoice-1', task: 't', group: b });
    await queue.submit({ id: 'invoice-2', task: 't', group: a });
    const was = await dump(name);
    const attempt = reshard(redisUrl(), name, { to: 1 });
    await expect(attempt).rejects.toMatchObject({ reason: 'ids', message: expect.stringContaining('invoice-1') });
    expect(await dump(name)).toEqual(was);
    expect((await queue.jobs({ state: 'waiting' })).map((j) => j.id).sort()).toEqual(['invoice-1', 'invoice-1', 'invoice-2']);
  });

  it('refuses a bad count with a ValidationError naming it, and a client with the old count after it is done', async () => {
    const name = uniqueQueue('reshard-bad');
    const queue = openQueue(name);
    await queue.submit({ task: 't' });
    for (const to of [0, 1.5, 1025, Number.NaN]) {
      await expect(reshard(redisUrl(), name, { to })).rejects.toMatchObject({ field: 'to' });
    }
    await expect(reshard(redisUrl(), name, { to: 2, batch: 0 })).rejects.toBeInstanceOf(ValidationError);
    await expect(reshard(redisUrl(), 'bad name', { to: 2 })).rejects.toMatchObject({ field: 'queue' });
    expect(await raw.hget(`{rota:${name}}:meta`, 'shards')).toBe('1');
    await reshard(redisUrl(), name, { to: 2 });
    const old = new Queue(name, { connection: redisUrl() });
    await expect(old.submit({ task: 't' })).rejects.toBeInstanceOf(ShardCountError);
    await old.close();
  });
});
