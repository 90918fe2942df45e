/**
 * The autoscaling gauges against known queue states: a paused group (not runnable), a group at its
 * concurrency limit and one parked at its rate (held), delayed jobs due within a minute and later,
 * an executor's slots, and a sharded queue (summed over shards, an executor counted once). Where
 * they overlap, the gauges are compared with Queue.stats() (what `rota stats` prints).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, serveMetrics, Worker } from '../../src/index.js';
import { MetricsSweep } from '../../src/observability/metrics-sweep.js';
import { MetricsStore } from '../../src/redis/metrics-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

const GAUGES = [
  'rota_queue_runnable_jobs',
  'rota_queue_held_jobs',
  'rota_queue_oldest_runnable_wait_seconds',
  'rota_queue_running_jobs',
  'rota_queue_due_soon_jobs',
  'rota_executor_slots',
  'rota_executor_slots_busy',
] as const;
type Gauges = Record<(typeof GAUGES)[number], number>;

/** The autoscaling gauges of queue `name` in one scrape of `url`. */
async function scrape(url: string, name: string): Promise<Gauges> {
  const body = await (await fetch(url)).text();
  const out = {} as Gauges;
  for (const g of GAUGES) {
    const m = new RegExp(`^${g}\\{queue="${name}"\\} (\\S+)$`, 'm').exec(body);
    if (!m) throw new Error(`no ${g} in the scrape`);
    out[g] = Number(m[1]);
  }
  return out;
}

/** Scrapes until `pred` holds (the executor's info is rewritten by its heartbeat). */
async function scrapeUntil(url: string, name: string, pred: (g: Gauges) => boolean): Promise<Gauges> {
  for (let i = 0; ; i++) {
    const g = await scrape(url, name);
    if (pred(g)) return g;
    if (i === 200) throw new Error(`gauges never matched: ${JSON.stringify(g)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('autoscaling gauges', () => {
  it('count runnable jobs without paused groups, and delayed jobs due within a minute', async () => {
    const name = uniqueQueue('autoscale');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    await queue.pauseGroup('paused');
    await queue.submitBulk([
      { task: 'noop', group: 'paused' },
      { task: 'noop', group: 'paused' },
      { task: 'noop', group: 'paused' },
      { task: 'noop', group: 'a' },
      { task: 'noop', group: 'b', priority: 'low' },
      { task: 'noop', group: 'later', delay: 30_000 },
      { task: 'noop', group: 'later', delay: 45_000 },
      { task: 'noop', group: 'later', delay: 600_000 },
    ]);
    const oldest = (await queue.jobs({ state: 'waiting', group: 'a' }))[0];
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', sweepIntervalMs: 1000, queue });
    open.push(metrics);
    const g = await scrape(metrics.url, name);
    const stats = await queue.stats();
    expect(stats.counts.waiting).toBe(5);
    expect(stats.counts.delayed).toBe(3);
    expect(g.rota_queue_runnable_jobs).toBe(stats.counts.waiting - 3);
    expect(g.rota_queue_held_jobs).toBe(0);
    expect(g.rota_queue_running_jobs).toBe(stats.counts.running);
    expect(g.rota_queue_due_soon_jobs).toBe(2);
    expect(g.rota_executor_slots).toBe(0);
    expect(g.rota_executor_slots_busy).toBe(0);
    // The oldest runnable job is group a's (the paused group's were submitted in the same call).
    const now = Date.now();
    expect(g.rota_queue_oldest_runnable_wait_seconds).toBeGreaterThan(0);
    expect(g.rota_queue_oldest_runnable_wait_seconds).toBeLessThanOrEqual((now - oldest.submitted) / 1000 + 1);

    // Resuming the group makes its jobs runnable (once the next sweep reads it, a second on);
    // with nothing runnable the wait is 0.
    await queue.resumeGroup('paused');
    expect((await scrapeUntil(metrics.url, name, (x) => x.rota_queue_runnable_jobs === 5)).rota_queue_runnable_jobs).toBe(5);
    await queue.pauseGroup('paused');
    await queue.pauseGroup('a');
    await queue.pauseGroup('b');
    const none = await scrapeUntil(metrics.url, name, (x) => x.rota_queue_runnable_jobs === 0);
    expect(none.rota_queue_oldest_runnable_wait_seconds).toBe(0);
  });

  it('count jobs held by a concurrency limit or a rate apart, and an executor’s slots', async () => {
    const name = uniqueQueue('autoscale');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    await queue.setGroupLimit('limited', { concurrency: 2 });
    await queue.setGroupLimit('rated', { rate: { max: 1, perMs: 30_000 } });
    await queue.submitBulk([
      ...Array.from({ length: 5 }, () => ({ task: 'slow', group: 'limited' })),
      { task: 'quick', group: 'rated' },
      { task: 'quick', group: 'rated' },
    ]);
    let release = () => {};
    const blocked = new Promise<void>((r) => {
      release = r;
    });
    const worker = new Worker(
      name,
      { slow: () => blocked.then(() => 'done'), quick: () => 'done' },
      { connection: redisUrl(), concurrency: 4, leaseMs: 1500 },
    );
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', sweepIntervalMs: 1000, queue, workers: [worker] });
    open.push(metrics, worker, { close: async () => release() });
    // Two runs of `limited` hold its limit, three of its jobs wait; `rated` ran one job and is
    // parked for 30 s with the other.
    const g = await scrapeUntil(
      metrics.url,
      name,
      (x) => x.rota_executor_slots_busy === 2 && x.rota_queue_held_jobs === 4 && x.rota_queue_running_jobs === 2,
    );
    const stats = await queue.stats();
    expect(stats.counts.waiting).toBe(4);
    expect(stats.counts.running).toBe(2);
    expect(g.rota_queue_runnable_jobs).toBe(0);
    expect(g.rota_queue_oldest_runnable_wait_seconds).toBe(0);
    expect(g.rota_queue_running_jobs).toBe(stats.counts.running);
    // (the parked group's entry in `delayed`, due within the minute, is no job)
    expect(g.rota_queue_due_soon_jobs).toBe(0);
    expect(g.rota_executor_slots).toBe(4);
    const [info] = await queue.workers();
    expect(info.concurrency).toBe(4);
  });

  it('sum over the shards of a sharded queue, each executor counted once', async () => {
    const name = uniqueQueue('autoscale');
    const queue = new Queue(name, { connection: redisUrl(), shards: 3 });
    open.push(queue);
    const groups = Array.from({ length: 12 }, (_, i) => `g${i}`);
    await queue.pauseGroup('g0');
    await queue.pauseGroup('g1');
    await queue.submitBulk([
      ...groups.flatMap((group) => [
        { task: 'noop', group },
        { task: 'noop', group },
      ]),
      ...groups.map((group) => ({ task: 'noop', group, delay: 20_000 })),
    ]);
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', sweepIntervalMs: 1000, queue });
    open.push(metrics);
    const g = await scrape(metrics.url, name);
    const stats = await queue.stats();
    const paused = (await queue.groups()).filter((x) => x.paused).reduce((n, x) => n + x.waiting, 0);
    expect(paused).toBe(4);
    expect(g.rota_queue_runnable_jobs).toBe(stats.counts.waiting - paused);
    expect(g.rota_queue_runnable_jobs).toBe(20);
    expect(g.rota_queue_due_soon_jobs).toBe(12);

    // An executor registers in every shard: its slots count once.
    const worker = new Worker(name, {}, { connection: redisUrl(), shards: 3, concurrency: 3, leaseMs: 1500 });
    open.push(worker);
    const withExecutor = await scrapeUntil(metrics.url, name, (x) => x.rota_executor_slots > 0);
    expect(withExecutor.rota_executor_slots).toBe(3);
  });

  it('sweep a large groups hash over several sweeps, keeping the last whole round’s sums', async () => {
    const name = uniqueQueue('autoscale');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    const groups = Array.from({ length: 30 }, (_, i) => `g${i}`);
    for (const group of groups.slice(0, 10)) await queue.pauseGroup(group);
    await queue.submitBulk(groups.map((group) => ({ task: 'noop', group })));
    // (a sweep of about 4 fields, every read a sweep: the 31 fields, the pad included, take several)
    const sweep = new MetricsSweep({
      stores: [new MetricsStore(new QueueStore(queue.client, name, { maxEvents: 0 }))],
      shards: 1,
      groups: 'none',
      intervalMs: 0,
      autoscaleFields: 4,
    });
    const read = async () => (await sweep.read()).autoscale;
    const first = await read();
    // Before a round ends, the paused jobs subtracted are those swept so far.
    expect(first.runnable).toBeGreaterThan(20);
    let a = first;
    for (let i = 0; i < 20; i++) a = await read();
    expect(a.runnable).toBe(20);
    expect(a.oldestWait).toBeGreaterThan(0);
    // A job submitted now counts at once (the waiting count is read whole every scrape).
    await queue.submit({ task: 'noop', group: 'g29' });
    expect((await read()).runnable).toBe(21);
  });
});
