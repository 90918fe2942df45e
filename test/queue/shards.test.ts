/**
 * A queue of several shards on one Redis server: routing by group and by id, bulk submits split
 * by shard, executors taking from every shard in turn (per-shard wake-ups, delayed jobs, a light
 * tenant beside a flood in another shard), reads that add up, and the shard count check.
 */
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, ShardCountError } from '../../src/index.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { closeAll, eventually, openQueue, openWorker, privateRedis, rawClient, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);

const SHARDS = 4;

/** `n` group names, at least one in each of the SHARDS shards. */
function groupsOverShards(n: number): string[] {
  const groups = Array.from({ length: n }, (_, i) => `tenant-${i}`);
  const shards = new Set(groups.map((g) => shardOfGroup(g, SHARDS)));
  expect(shards.size).toBe(SHARDS);
  return groups;
}

/** Two groups in different shards. */
function groupsInTwoShards(): [string, string] {
  const a = 'flood';
  for (let i = 0; ; i++) {
    const b = `light-${i}`;
    if (shardOfGroup(b, SHARDS) !== shardOfGroup(a, SHARDS)) return [a, b];
  }
}

describe('a sharded queue', () => {
  const own = privateRedis();

  it('keeps each job in its group’s shard, finds it by id, and adds reads up across shards', async () => {
    const name = uniqueQueue('shards');
    const q = openQueue(name, { shards: SHARDS });
    const groups = groupsOverShards(12);
    const jobs = await q.submitBulk(groups.flatMap((group) => [0, 1, 2].map((i) => ({ task: 't', group, args: i }))));
    const raw = rawClient();
    try {
      for (const job of jobs) {
        const own = q.shardKeys[shardOfGroup(job.group, SHARDS)];
        expect(await raw.hget(own.job(job.id), 'group')).toBe(job.group);
        expect((await q.getJob(job.id))?.group).toBe(job.group);
      }
    } finally {
      raw.disconnect();
    }
    expect((await q.counts()).waiting).toBe(36);
    const listed = await q.groups();
    expect(listed.map((g) => g.group)).toEqual([...groups].sort());
    expect(listed.every((g) => g.waiting === 3)).toBe(true);
    expect((await q.jobs({ state: 'waiting', limit: 100 })).length).toBe(36);
    expect((await q.jobs({ state: 'waiting', group: groups[5] })).map((j) => j.args)).toEqual([0, 1, 2]);

    // A caller's id is not Rota's: it is looked up in every shard.
    const [mine] = await q.submitBulk([{ id: 'order-17', task: 't', group: groups[7] }]);
    expect((await q.getJob('order-17'))?.group).toBe(groups[7]);
    expect(await q.submit({ id: 'order-17', task: 't', group: groups[7] })).toMatchObject({ id: mine.id, state: 'waiting' });
    expect(await q.cancel('order-17')).toBe('cancelled');
    expect(await q.cancel('nothing-here')).toBeNull();
    expect((await q.counts()).cancelled).toBe(1);
  });

  it('runs every job exactly once with executors that take from every shard, and lists them once', async () => {
    const name = uniqueQueue('shards');
    const q = openQueue(name, { shards: SHARDS });
    const runs = new Map<string, number>();
    const workers = [0, 1].map(() =>
      openWorker(
        name,
        {
          t: ({ job }: { job: Job }) => {
            runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          },
        },
        { shards: SHARDS, concurrency: 8 },
      ),
    );
    await Promise.all(workers.map((w) => w.run()));
    const groups = groupsOverShards(40);
    let done = 0;
    const bus = new EventEmitter();
    for (const w of workers) w.on('completed', () => bus.emit('done', ++done));
    await q.submitBulk(Array.from({ length: 800 }, (_, i) => ({ task: 't', group: groups[i % groups.length] })));
    await until(bus, 'done', () => done >= 800, 30_000);
    expect(runs.size).toBe(800);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect((await q.counts()).success).toBe(800);
    expect((await q.workers()).map((w) => w.id).sort()).toEqual(workers.map((w) => w.id).sort());
  });

  it('wakes an idle executor through the shard a job is submitted to, without polling the others', async () => {
    const name = uniqueQueue('shards');
    const connection = own.server.url;
    const q = openQueue(name, { shards: SHARDS, connection });
    const w = openWorker(name, { t: () => 'ok' }, { shards: SHARDS, connection, fallbackWakeMs: 600_000 });
    await w.run();
    const groups = groupsOverShards(12);
    const fcalls = async () => {
      const stats = (await own.admin.info('commandstats')).match(/cmdstat_fcall:calls=(\d+)/);
      return Number(stats?.[1] ?? 0);
    };
    const asleep = () => eventually(async () => (w as unknown as { taker: { waiting: boolean } }).taker.waiting);
    for (const group of groups.slice(0, 6)) {
      // (idle between jobs: every shard dry, the executor asleep on each shard's marker)
      await asleep();
      const before = await fcalls();
      const done = new Promise((resolve) => w.once('completed', resolve));
      await q.submit({ task: 't', group });
      await done;
      // submit, one take (it finds the job), the finish (its take finds the shard dry): no take per shard
      expect((await fcalls()) - before).toBeLessThanOrEqual(4);
    }
  });

  it('runs a delayed job in any shard at its due time while the executor sleeps', async () => {
    const name = uniqueQueue('shards');
    const q = openQueue(name, { shards: SHARDS });
    const w = openWorker(name, { t: () => 'ok' }, { shards: SHARDS, fallbackWakeMs: 600_000 });
    await w.run();
    const groups = groupsOverShards(12);
    const done = new Map<string, Job>();
    w.on('completed', (job) => done.set(job.id, job));
    const jobs = await q.submitBulk(groups.slice(0, 8).map((group, i) => ({ task: 't', group, delay: 200 + 50 * i })));
    await until(w, 'completed', () => done.size === jobs.length, 10_000);
    for (const job of jobs) expect(done.get(job.id)!.started!).toBeGreaterThanOrEqual(job.runAt!);
  });

  it('takes a light tenant’s job beside a flood in another shard within the first takes', async () => {
    const name = uniqueQueue('shards');
    const q = openQueue(name, { shards: SHARDS });
    const [flood, light] = groupsInTwoShards();
    await q.submitBulk(Array.from({ length: 2000 }, () => ({ task: 't', group: flood })));
    const order: string[] = [];
    const w = openWorker(
      name,
      {
        t: ({ job }: { job: Job }) => {
          order.push(job.group);
        },
      },
      { shards: SHARDS, concurrency: 10, autorun: false },
    );
    await w.run();
    await until(w, 'completed', () => order.length >= 50);
    await q.submit({ task: 't', group: light });
    const at = order.length;
    await until(w, 'completed', () => order.includes(light));
    // The executor takes from the shards in turn: the light shard's job is in one of its next takes.
    expect(order.indexOf(light) - at).toBeLessThan(4 * 10 + 20);
  });

  it('keeps a fan-out’s children with their parent, in whatever group, and counts them there', async () => {
    const name = uniqueQueue('shards');
    const q = openQueue(name, { shards: SHARDS });
    const [parentGroup, childGroup] = groupsInTwoShards();
    const ran: string[] = [];
    const w = openWorker(
      name,
      {
        parent: (ctx) => ctx.fanOut([1, 2, 3, 4, 5], { task: 'child', group: childGroup }),
        child: ({ job }: { job: Job }) => {
          ran.push(job.id);
        },
      },
      { shards: SHARDS, concurrency: 4 },
    );
    const parent = await q.submit({ task: 'parent', group: parentGroup });
    await until(w, 'completed', () => ran.length === 5);
    const raw = rawClient();
    try {
      const home = q.shardKeys[shardOfGroup(parentGroup, SHARDS)];
      for (const id of ran) {
        expect(id.startsWith(`${parent.id}/`)).toBe(true);
        expect(await raw.hget(home.job(id), 'group')).toBe(childGroup);
        expect((await q.getJob(id))?.state).toBe('success');
      }
    } finally {
      raw.disconnect();
    }
    await eventually(async () => (await q.getJob(parent.id))?.children?.success === 5);
  });

  it('merges the shards’ events, and resumes every shard from an event’s streamId', async () => {
    const name = uniqueQueue('shards');
    const q = openQueue(name, { shards: SHARDS });
    const groups = groupsOverShards(12);
    const stop = new AbortController();
    const seen: Array<{ id: string; streamId: string }> = [];
    const reading = (async () => {
      for await (const e of q.events({ from: q.shardKeys.map(() => '0').join(','), signal: stop.signal })) {
        seen.push(e);
        if (seen.length === 12) stop.abort();
      }
    })();
    const jobs = await q.submitBulk(groups.map((group) => ({ task: 't', group })));
    await reading;
    expect(seen.map((e) => e.id).sort()).toEqual(jobs.map((j) => j.id).sort());
    // Resuming after the sixth event gives the six after it, in whatever shard they are.
    const rest: string[] = [];
    const again = new AbortController();
    for await (const e of q.events({ from: seen[5].streamId, signal: again.signal })) {
      rest.push(e.id);
      if (rest.length === 6) again.abort();
    }
    expect(rest.sort()).toEqual(
      seen
        .slice(6)
        .map((e) => e.id)
        .sort(),
    );
    await expect(async () => {
      for await (const _ of q.events({ from: '0-0' })) break;
    }).rejects.toThrow(/one stream id per shard/);
  });

  it('refuses a part configured with another shard count, and writes nothing', async () => {
    const name = uniqueQueue('shards');
    await openQueue(name, { shards: SHARDS }).submit({ task: 't', group: 'a' });
    const other = openQueue(name, { shards: 2 });
    await expect(other.submit({ task: 't', group: 'b' })).rejects.toBeInstanceOf(ShardCountError);
    await expect(openQueue(name).submit({ task: 't', group: 'b' })).rejects.toThrow(/has 4 shards.*shards: 1/);
    // (an executor too: its start rejects, it does not try again)
    const w = openWorker(name, { t: () => 'ok' }, { shards: 2, autorun: false });
    w.on('error', () => {});
    await expect(w.run()).rejects.toBeInstanceOf(ShardCountError);
    // (reads too: they would miss shards)
    await expect(other.counts()).rejects.toBeInstanceOf(ShardCountError);
    await expect(openQueue(name, { shards: 8 }).getJob('x')).rejects.toBeInstanceOf(ShardCountError);
    expect((await openQueue(name, { shards: SHARDS }).counts()).waiting).toBe(1);
    expect(() => openQueue(name, { shards: 0 })).toThrow(/shards/);
  });
});
