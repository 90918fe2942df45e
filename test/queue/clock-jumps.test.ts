/**
 * The Redis server's clock stepped while executors work (libfaketime moves its realtime clock,
 * not its monotonic one, as NTP or an operator would): the executors notice each step against
 * their own monotonic clocks and report it; a forward step expires no lease before its holder's
 * next beat, and a retry after it is taken at its due time; a backward step keeps a dead
 * executor's runs waiting a lease, not the step plus a lease.
 */
import type { Redis } from 'ioredis';
import { Redis as RedisClient } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClockJump,
  type Handlers,
  LeaseLostError,
  PeriodicTasks,
  Queue,
  Scheduler,
  serveMetrics,
  Worker,
  type WorkerOptions,
} from '../../src/index.js';
import { fakeClockMissing, SteppedClock } from '../helpers/faketime.js';
import { RedisServer } from '../helpers/redis-server.js';
import { closeAll, eventually, track, uniqueQueue, until } from '../helpers/setup.js';
import { settings, startRuns, storeOf, takeRuns } from '../helpers/store.js';

const missing = fakeClockMissing();
const HOUR_S = 3600;

let clock: SteppedClock;
let server: RedisServer;
let raw: Redis;
beforeAll(async () => {
  if (missing) return;
  clock = new SteppedClock();
  server = await RedisServer.start({ env: clock.redisEnv() });
  raw = new RedisClient(server.url);
});
afterEach(() => closeAll());
afterAll(async () => {
  raw?.disconnect();
  await server?.destroy();
  clock?.remove();
});

function worker(name: string, handlers: Handlers, opts: Partial<WorkerOptions> = {}): Worker & { jumps: ClockJump[] } {
  const w = track(new Worker(name, handlers, { connection: server.url, ...opts })) as Worker & { jumps: ClockJump[] };
  w.jumps = [];
  w.on('clockJump', (j) => w.jumps.push(j));
  return w;
}

/** The registry score of executor `id` (its last beat plus its entry's time to live). */
const beatOf = async (name: string, id: string) => Number(await raw.zscore(`{rota:${name}}:workers`, id));

describe.skipIf(missing !== null)(`a step of the Redis server's clock${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('forward: no lease expires before its holder beats again, and both executors report the step', async () => {
    const name = uniqueQueue('jump-fwd');
    const q = track(new Queue(name, { connection: server.url }));
    const starts = new Map<string, number>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handlers: Handlers = {
      hold: async ({ job }) => {
        starts.set(job.id, (starts.get(job.id) ?? 0) + 1);
        await gate;
      },
    };
    // The holder beats every 2 s; the other executor passes over expired leases every half second.
    const holder = worker(name, handlers, { leaseMs: 6000, concurrency: 10, retryDelay: 100 });
    const lost: string[] = [];
    holder.on('error', (e) => e instanceof LeaseLostError && lost.push(e.jobId));
    let completed = 0;
    holder.on('completed', () => completed++);
    await q.submitBulk(Array.from({ length: 10 }, (_, i) => ({ task: 'hold', group: `g${i}` })));
    await eventually(async () => starts.size === 10);
    const other = worker(name, handlers, { leaseMs: 1000, concurrency: 10, retryDelay: 100 });
    await other.run();
    const metrics = track(await serveMetrics({ port: 0, host: '127.0.0.1', queue: q, workers: [holder, other] }));
    // Step just after a beat of the holder: its next one is 2 s away, the other's passes 0.5 s.
    const before = await beatOf(name, holder.id);
    await eventually(async () => (await beatOf(name, holder.id)) !== before);
    clock.step(HOUR_S);
    const stepped = await beatOf(name, holder.id);
    await eventually(async () => (await beatOf(name, holder.id)) !== stepped, 10_000);
    release();
    await eventually(async () => completed + lost.length === 10, 15_000);
    expect(lost).toEqual([]);
    expect([...starts.values()]).toEqual(Array(10).fill(1));
    expect(await q.counts()).toMatchObject({ success: 10 });
    for (const w of [holder, other]) {
      expect(w.jumps.length, 'one step reported').toBeGreaterThanOrEqual(1);
      expect(w.jumps[0].jumpMs).toBeGreaterThan(HOUR_S * 1000 - 60_000);
    }
    const body = await (await fetch(metrics.url)).text();
    const counted = new RegExp(`rota_server_clock_jumps_total\\{queue="${name}",direction="forward"\\} (\\d+)`).exec(body);
    expect(Number(counted?.[1])).toBe(holder.jumps.length + other.jumps.length);
  }, 40_000);

  it('forward: a retry is taken at its due time, not at the fallback wake', async () => {
    const name = uniqueQueue('jump-retry');
    const q = track(new Queue(name, { connection: server.url }));
    let runs = 0;
    // The fallback wake is longer than the test: only the due time can wake the executor.
    const w = worker(
      name,
      {
        flaky: async () => {
          runs++;
          if (runs === 1) throw new Error('first run fails');
        },
      },
      { leaseMs: 3000, retryDelay: 200, fallbackWakeMs: 120_000 },
    );
    await w.run();
    clock.step(HOUR_S);
    // (the executor learns the server's new time from its next beat)
    const stepped = await beatOf(name, w.id);
    await eventually(async () => (await beatOf(name, w.id)) !== stepped, 10_000);
    const { id } = await q.submit({ task: 'flaky' });
    await until(w, 'completed', () => runs === 2, 20_000);
    expect((await q.getJob(id))?.state).toBe('success');
    expect(w.jumps.map((j) => j.jumpMs > 0)).toEqual([true]);
  }, 40_000);

  it("back: a dead executor's runs are recovered a lease after the step, not the step plus a lease", async () => {
    const name = uniqueQueue('jump-back');
    const q = track(new Queue(name, { connection: server.url }));
    await q.submitBulk(Array.from({ length: 3 }, (_, i) => ({ task: 'work', group: `g${i}` })));
    // An executor takes the jobs with 20 s leases and dies.
    const store = storeOf(raw, name);
    const runs = await takeRuns(store, 3, settings('dead', { leaseMs: 20_000 }));
    expect(runs).toHaveLength(3);
    await startRuns(store, runs, 20_000);
    let done = 0;
    const w = worker(name, { work: async () => void done++ }, { leaseMs: 2000, retryDelay: 100 });
    await w.run();
    clock.step(-HOUR_S);
    await until(w, 'completed', () => done === 3, 25_000);
    expect(w.jumps[0]?.jumpMs).toBeLessThan(-(HOUR_S * 1000 - 60_000));
    expect(await q.counts()).toMatchObject({ success: 3 });
  }, 40_000);

  it('back and forward: a scheduler replica reports each step', async () => {
    const name = uniqueQueue('jump-sched');
    const scheduler = track(new Scheduler(name, { connection: server.url, fallbackWakeMs: 1000 }));
    const jumps: ClockJump[] = [];
    scheduler.on('clockJump', (j) => jumps.push(j));
    let fired = 0;
    scheduler.on('fired', () => fired++);
    await scheduler.start();
    const tasks = track(new PeriodicTasks(name, { connection: server.url }));
    await tasks.upsert({ id: 'tick', task: 'noop', timer: 'every 1s', overlap: 'allow' });
    // Once it submitted an occurrence, its claims have told it the server's time (its idle loop
    // claims every second at least: each claim answers the server's time).
    await until(scheduler, 'fired', () => fired > 0, 10_000);
    clock.step(-HOUR_S);
    await until(scheduler, 'clockJump', () => jumps.length === 1, 10_000);
    clock.step(HOUR_S);
    await until(scheduler, 'clockJump', () => jumps.length === 2, 10_000);
    expect(jumps.map((j) => Math.round(j.jumpMs / 60_000))).toEqual([-60, 60]);
  }, 30_000);

  it('back: an interval task goes on at its interval, a calendar task runs nothing again, and two replicas count the jump once', async () => {
    const name = uniqueQueue('jump-iv');
    const replicas = [1, 2].map(() => track(new Scheduler(name, { connection: server.url, fallbackWakeMs: 1000 })));
    const jumps: ClockJump[] = [];
    for (const s of replicas) s.on('clockJump', (j) => jumps.push(j));
    await Promise.all(replicas.map((s) => s.start()));
    const tasks = track(new PeriodicTasks(name, { connection: server.url }));
    await tasks.upsert({ id: 'iv', task: 'noop', timer: 'every 2s', overlap: 'allow' });
    await tasks.upsert({ id: 'cal', task: 'noop', timer: '*:*:0/2', overlap: 'allow' });
    // (more interval tasks than one step of the walk that moves them back: it spans claims)
    for (let i = 0; i < 450; i++) await tasks.upsert({ id: `h${i}`, task: 'noop', timer: 'every 1h' });
    const history = async (id: string) => {
      const flat = await raw.zrange(`{rota:${name}}:p:h:${id}`, 0, -1, 'WITHSCORES');
      const out: Array<{ id: string; at: number }> = [];
      for (let i = 0; i < flat.length; i += 2) out.push({ id: flat[i], at: Number(flat[i + 1]) });
      return out;
    };
    await eventually(async () => (await history('iv')).length >= 2 && (await history('cal')).length >= 2, 15_000);
    const [before] = (await raw.time()).map(Number);
    clock.step(-HOUR_S);
    // The interval task goes on every 2 s on its grid moved back an hour, under new ids.
    const after = await eventually(async () => {
      const h = (await history('iv')).filter((e) => e.id.endsWith('~1'));
      return h.length >= 3 && h;
    }, 20_000);
    const gaps = after.slice(1).map((e, i) => e.at - after[i].at);
    expect(gaps.every((g) => g === 2000)).toBe(true);
    for (const e of after) expect(e.id).toBe(`iv@${e.at}~1`);
    // (those instants are an hour before the jump's: the task's elapsed time, not a replay of its last hour)
    expect(after[0].at).toBeLessThan(before * 1000 - HOUR_S * 1000 + 60_000);
    // The calendar task has nothing in the hour the clock went back over: its next occurrence is after its last.
    // (its runs' entries: a `~missed` entry records occurrences passed over, no run)
    const cal = (await history('cal')).filter((e) => e.id.startsWith('cal@'));
    expect(cal.length).toBeGreaterThanOrEqual(2);
    expect(cal.filter((e) => e.at < before * 1000 - 30 * 60_000)).toEqual([]);
    // Each replica noticed the jump; it was counted once, and its size kept.
    expect(await raw.hget(`{rota:${name}}:p:clock`, 'epoch')).toBe('1');
    expect(Math.round(Number(await raw.hget(`{rota:${name}}:p:clock`, 'shift')) / 60_000)).toBe(60);
    expect(jumps.length).toBeGreaterThanOrEqual(1);
    // Every interval task was moved back by the jump, once; the calendar task was not.
    const shift = await raw.hget(`{rota:${name}}:p:clock`, 'shift');
    await eventually(async () => (await raw.hexists(`{rota:${name}}:p:clock`, 'walk')) === 0, 20_000);
    for (let i = 0; i < 450; i += 50) expect(await raw.hmget(`{rota:${name}}:p:t:h${i}`, 'gs', 'ss')).toEqual([shift, shift]);
    expect(Number(await raw.hget(`{rota:${name}}:p:t:cal`, 'gs'))).toBe(0);
    // A run's id in the new form is reserved, as the plain one is.
    const q = track(new Queue(name, { connection: server.url }));
    await expect(q.submit({ task: 'noop', id: after[0].id })).rejects.toThrow(/reserved|periodic/);
  }, 60_000);
});
