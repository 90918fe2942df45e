/**
 * Reshard tests' queue: one unsharded queue with jobs in every state over many groups and both
 * priorities (made by running real executors and a scheduler), what it looked like (a snapshot),
 * and an audit of a layout: every job where its shard count puts it, as it was, and each shard's
 * counts and group records agreeing with what the shard holds.
 */
import type { Redis } from 'ioredis';
import { expect } from 'vitest';
import { type Job, PeriodicTasks, PermanentError, Queue, Scheduler, Worker } from '../../src/index.js';
import { readGroupStates } from '../../src/redis/group-state.js';
import { queueKeys } from '../../src/redis/keys.js';
import { homeShard, shardOfGroup, shardOfId, shardTag } from '../../src/redis/shards.js';
import { GROUP_DUE_MARK } from '../../src/redis/wire.js';
import { eventually, redisUrl } from './setup.js';

/** What the queue held before a reshard. */
export interface Snapshot {
  jobs: Map<string, Job>;
  logs: Map<string, string[]>;
  /** Per group and list ('h', 'l', 'r'): its job ids, head to tail, in each shard that has it. */
  lists: Map<string, string[][]>;
  groups: Awaited<ReturnType<Queue['groups']>>;
  counts: Awaited<ReturnType<Queue['counts']>>;
}

/** Group names of the waiting jobs: many, so that every shard gets some under 2 and 4 shards. */
export const GROUPS = Array.from({ length: 24 }, (_, i) => `tenant-${i}`);

/** The first of `<prefix>-0`, `<prefix>-1`, ... that `ok` accepts. */
function named(prefix: string, ok: (group: string) => boolean): string {
  for (let i = 0; ; i++) if (ok(`${prefix}-${i}`)) return `${prefix}-${i}`;
}

/**
 * The paused group the fan-outs' children wait in, and the groups of their parents, chosen so
 * that under 2 shards all three share a shard and under 4 the children of one parent leave that
 * shard while the other's and the group's own jobs stay: its list then mixes jobs that stay with
 * jobs that leave, the stayers at its tail.
 */
export const KIDS = named('kids', (g) => shardOfGroup(g, 4) === shardOfGroup(g, 2));
const FAN_STAYS = named('fan-stays', (g) => shardOfGroup(g, 4) === shardOfGroup(KIDS, 4));
const FAN_LEAVES = named('fan-leaves', (g) => shardOfGroup(g, 4) === shardOfGroup(KIDS, 4) + 2);

/**
 * Fills unsharded queue `name` (returns the ids it made): finished jobs (success with a result and
 * logs, failed, cancelled), stuck jobs (due in an hour), a released job (waiting in its group's
 * preferred list), fan-out parents (one with a Rota id, one with a caller's) whose children wait
 * in a paused group ({@link KIDS}), a periodic run, delayed jobs, and waiting jobs of both
 * priorities over {@link GROUPS}, a few with caller-given ids and one group with a long list.
 * Groups with settings: KIDS paused, `tenant-1` limited, `tenant-2` weighted, `tenant-3`
 * rate-limited (5 an hour, with the starts of its finished jobs logged).
 */
export async function populate(name: string): Promise<string[]> {
  const connection = redisUrl();
  const queue = new Queue(name, { connection });
  const ids: string[] = [];
  try {
    await queue.pauseGroup(KIDS);
    await queue.setGroupLimit('tenant-1', { concurrency: 2 });
    await queue.setGroupLimit('tenant-2', { weight: 3 });
    await queue.setGroupLimit('tenant-3', { rate: { max: 5, perMs: 3_600_000 } });

    // Runs: jobs that end in each state, through a real executor.
    const ended = new Set<string>();
    const started = new Set<string>();
    const worker = new Worker(
      name,
      {
        ok: async ({ log }) => {
          log('ran once');
          log('and logged twice');
          return { ok: true };
        },
        perm: async () => {
          throw new PermanentError('never works');
        },
        flaky: async () => {
          throw new Error('not yet');
        },
        fan: async (ctx) => {
          await ctx.fanOut(
            Array.from({ length: 10 }, (_, i) => i),
            { task: 'child', group: KIDS },
          );
        },
        hang: async (ctx) => {
          started.add(ctx.job.id);
          await new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
        },
      },
      { connection, concurrency: 8, retryDelay: 3_600_000 },
    );
    for (const e of ['completed', 'failed', 'stuck', 'cancelled'] as const) worker.on(e, (j: Job) => ended.add(j.id));
    const runs: Job[] = [];
    for (let i = 0; i < 6; i++) runs.push(await queue.submit({ task: 'ok', group: GROUPS[i % 6] }));
    runs.push(await queue.submit({ id: 'caller-ok', task: 'ok', group: 'tenant-5' }));
    runs.push(await queue.submit({ task: 'perm', group: 'tenant-4', maxRetries: 2 }));
    runs.push(await queue.submit({ task: 'flaky', group: 'tenant-6', maxRetries: 3 }));
    runs.push(await queue.submit({ id: 'caller-flaky', task: 'flaky', group: 'tenant-7', maxRetries: 3, priority: 'low' }));
    runs.push(await queue.submit({ task: 'ok', group: 'tenant-3' }));
    runs.push(await queue.submit({ task: 'ok', group: 'tenant-3' }));
    await eventually(async () => runs.every((j) => ended.has(j.id)), 20_000);
    // (one after the other: the children of the first are the older, at the list's tail)
    const fans = [await queue.submit({ task: 'fan', group: FAN_STAYS })];
    await eventually(async () => (await queue.getJob(`${fans[0].id}/9`)) !== null);
    fans.push(await queue.submit({ id: 'parent-x', task: 'fan', group: FAN_LEAVES }));
    await eventually(async () => (await queue.getJob('parent-x/9')) !== null);
    runs.push(...fans);
    const hang = await queue.submit({ task: 'hang', group: 'tenant-10' });
    await eventually(async () => started.has(hang.id));
    await worker.close({ timeout: 50 });
    ids.push(...runs.map((j) => j.id), hang.id);
    for (const parent of [fans[0].id, 'parent-x']) for (let i = 0; i < 10; i++) ids.push(`${parent}/${i}`);

    // A periodic run, waiting in the home shard.
    const tasks = new PeriodicTasks(name, { connection });
    const scheduler = new Scheduler(name, { connection });
    try {
      await tasks.upsert({ id: 'nightly', task: 'ok', group: 'tenant-11', timer: '*-*-* 03:00:00' });
      await scheduler.start();
      const run = await tasks.trigger('nightly');
      await eventually(async () => (await queue.getJob(run!.jobId))?.state === 'waiting');
      ids.push(run!.jobId);
    } finally {
      await scheduler.close();
      await tasks.close();
    }

    // Waiting and delayed jobs, with nothing running.
    const specs = [];
    for (let i = 0; i < 120; i++) {
      const group = GROUPS[i % GROUPS.length];
      const id = i % 10 === 3 ? `order-${i}` : undefined;
      specs.push({ id, task: 'work', group, priority: i % 3 === 0 ? ('low' as const) : ('high' as const), args: { i } });
    }
    for (let i = 0; i < 20; i++) specs.push({ task: 'work', group: 'big', priority: 'high' as const, args: { i } });
    for (let i = 0; i < 4; i++) specs.push({ task: 'work', group: KIDS, args: { own: i } });
    const waiting = await queue.submitBulk(specs);
    const delayed = [];
    for (let i = 0; i < 10; i++) {
      delayed.push({ task: 'work', group: GROUPS[(i * 5) % GROUPS.length], delay: 3_600_000 + i * 1000 });
    }
    delayed.push({ id: 'caller-later', task: 'work', group: 'tenant-12', runAt: Date.now() + 7_200_000 });
    const later = await queue.submitBulk(delayed);
    const cancelled = await queue.submit({ task: 'work', group: 'tenant-13' });
    await queue.cancel(cancelled.id);
    ids.push(...waiting.map((j) => j.id), ...later.map((j) => j.id), cancelled.id);
  } finally {
    await queue.close();
  }
  return ids;
}

/** What queue `name` with `shards` shards holds of jobs `ids`: their records, logs, group lists, groups and counts. */
export async function snapshot(name: string, shards: number, ids: readonly string[], raw: Redis): Promise<Snapshot> {
  const queue = new Queue(name, { connection: redisUrl(), shards });
  try {
    const jobs = new Map<string, Job>();
    const logs = new Map<string, string[]>();
    for (const id of ids) {
      const job = await queue.getJob(id);
      expect(job, `job ${id}`).not.toBeNull();
      jobs.set(id, job!);
      logs.set(id, await queue.jobLogs(id));
    }
    const lists = new Map<string, string[][]>();
    for (const keys of queue.shardKeys) {
      for (const group of (await readGroupStates(raw, keys.groups)).keys()) {
        for (const l of ['h', 'l', 'r']) {
          const ids = await raw.lrange(`${keys.group(group)}:${l}`, 0, -1);
          if (ids.length > 0) lists.set(`${group}:${l}`, [...(lists.get(`${group}:${l}`) ?? []), ids]);
        }
      }
    }
    return { jobs, logs, lists, groups: await queue.groups(), counts: await queue.counts() };
  } finally {
    await queue.close();
  }
}

/** The shard of `shards` a job belongs in: by its id, its periodic task (home), its parent, or its group. */
export function expectedShard(job: Job, jobs: ReadonlyMap<string, Job>, shards: number): number {
  if (shards === 1) return 0;
  const byId = shardOfId(job.id, shards);
  if (byId !== null) return byId;
  if (job.tracker) return homeShard(shards);
  const parent = job.id.match(/^(.*)\/\d+$/)?.[1];
  if (parent && jobs.get(parent)?.children) return expectedShard(jobs.get(parent)!, jobs, shards);
  return shardOfGroup(job.group, shards);
}

/** Whether `part` is `whole` with some ids left out (the same order). */
function inOrder(part: readonly string[], whole: readonly string[]): boolean {
  let at = 0;
  for (const id of part) {
    at = whole.indexOf(id, at);
    if (at < 0) return false;
    at++;
  }
  return true;
}

/**
 * Checks queue `name` after a reshard to `shards`: every job of `before` in the shard it belongs
 * in and nowhere else, read back as it was (state, due times, retries, errors, results, logs);
 * group lists in their order; group settings and counts as they were; no key of another layout
 * left; and each shard's counts and group records agreeing with the jobs it holds.
 */
export async function audit(name: string, shards: number, before: Snapshot, raw: Redis): Promise<void> {
  expect(await raw.hget(`{rota:${name}}:meta`, 'shards')).toBe(String(shards));
  const after = await snapshot(name, shards, [...before.jobs.keys()], raw);
  // (the stuck jobs' failed runs are in their attempts lists, which move with them)
  expect([...before.jobs.values()].filter((j) => j.state === 'stuck' && j.attempts?.length === 1).length).toBeGreaterThan(0);
  for (const [id, job] of before.jobs) {
    expect(after.jobs.get(id), `job ${id}`).toEqual(job);
    expect(after.logs.get(id), `logs of ${id}`).toEqual(before.logs.get(id));
    const want = expectedShard(job, before.jobs, shards);
    for (let s = 0; s <= homeShard(shards); s++) {
      const there = await raw.exists(queueKeys(name, s, shards).job(id));
      expect(there, `job ${id} in shard ${s} of ${shards}`).toBe(s === want ? 1 : 0);
    }
  }
  expect(after.groups).toEqual(before.groups);
  expect(after.counts).toEqual(before.counts);
  // A group's lists keep their order in each shard that has a part of them: all of it, as a group's
  // jobs are in its shard, but for fan-out children, which are with their parents (the jobs of one
  // origin keep their order, jobs from two shards meeting in one are not interleaved by age).
  expect([...after.lists.keys()].sort()).toEqual([...before.lists.keys()].sort());
  const origin = (id: string) => id.match(/^(.*)\/\d+$/)?.[1] ?? '';
  for (const [key, parts] of after.lists) {
    const was = before.lists.get(key)!.flat();
    expect(parts.flat().sort(), `list ${key}`).toEqual([...was].sort());
    for (const part of parts) {
      for (const from of new Set(part.map(origin))) {
        const [mine, all] = [part, was].map((ids) => ids.filter((id) => origin(id) === from));
        expect(inOrder(mine, all), `order of ${key}: ${mine} in ${all}`).toBe(true);
      }
    }
    if (!was.some((id) => origin(id) !== '')) expect(parts, `order of ${key}`).toEqual(before.lists.get(key));
  }
  // Only this layout's keys are left.
  const tags = new Set(Array.from({ length: homeShard(shards) + 1 }, (_, s) => shardTag(name, s, shards)));
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await raw.scan(cursor, 'MATCH', `{rota:${name}*`, 'COUNT', 1000);
    keys.push(...found);
    cursor = next;
  } while (cursor !== '0');
  for (const key of keys) {
    expect(tags.has(key.slice(0, key.indexOf('}') + 1)), `key ${key}`).toBe(true);
    expect(key, 'reshard leftovers').not.toMatch(/}:(moving|reshard:kept|rk:)/);
  }
  for (let s = 0; s <= homeShard(shards); s++) await auditShard(raw, name, s, shards, keys);
}

/** Checks that shard `s`'s counts and group records agree with the jobs it holds (`keys`: the queue's keys). */
async function auditShard(raw: Redis, name: string, s: number, shards: number, keys: readonly string[]): Promise<void> {
  const k = queueKeys(name, s, shards);
  const jobKeys = keys.filter((key) => key.startsWith(`${k.prefix}j:`));
  const counted: Record<string, number> = {};
  const stuck = new Map<string, number>();
  for (const key of jobKeys) {
    const [state, group] = await raw.hmget(key, 'state', 'group');
    if (state === 'planned') continue;
    counted[state!] = (counted[state!] ?? 0) + 1;
    if (state === 'stuck') stuck.set(group!, (stuck.get(group!) ?? 0) + 1);
  }
  const counts = Object.fromEntries(Object.entries(await raw.hgetall(k.counts)).filter(([, n]) => n !== '0'));
  expect(counts, `counts of shard ${s}`).toEqual(Object.fromEntries(Object.entries(counted).map(([st, n]) => [st, String(n)])));
  for (const [group, g] of await readGroupStates(raw, k.groups)) {
    const gk = k.group(group);
    expect(
      [await raw.llen(`${gk}:h`), await raw.llen(`${gk}:l`), await raw.llen(`${gk}:r`)],
      `lists of ${group} in shard ${s}`,
    ).toEqual([g.nh, g.nl, g.nr]);
    expect(g.stuck, `stuck jobs of ${group} in shard ${s}`).toBe(stuck.get(group) ?? 0);
  }
  // every job in `delayed` is delayed or stuck, and due at its time
  const due = await raw.zrange(k.delayed, 0, -1, 'WITHSCORES');
  for (let i = 0; i < due.length; i += 2) {
    if (due[i].startsWith(GROUP_DUE_MARK)) continue;
    const [state, runAt, dueAt] = await raw.hmget(k.job(due[i]), 'state', 'runAt', 'due');
    expect(due[i + 1]).toBe(state === 'stuck' ? dueAt : runAt);
  }
}
