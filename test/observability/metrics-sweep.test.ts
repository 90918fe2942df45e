/**
 * What a scrape costs Redis and the process: scrapes within the sweep interval, and concurrent
 * ones, share one sweep; at 30,000 groups the sweep reads the groups in bounded steps (counted
 * by Redis itself, INFO commandstats on a server of the test's own, scripts' commands included);
 * and which groups get series of their own (`groups`: none by default, top:N, all).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, Queue, serveMetrics, ValidationError, Worker } from '../../src/index.js';
import { AUTOSCALE_SWEEP_FIELDS, MetricsSweep, STEP_FIELDS } from '../../src/observability/metrics-sweep.js';
import { MetricsStore } from '../../src/redis/metrics-store.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { eventually, privateRedis, uniqueQueue, until } from '../helpers/setup.js';

const redis = privateRedis();

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

/** Commands Redis ran during `fn` (INFO commandstats), less those of the measuring itself. */
async function commandsDuring(fn: () => Promise<unknown>): Promise<{ total: number; by: Record<string, number> }> {
  await redis.admin.config('RESETSTAT');
  await fn();
  const info = await redis.admin.info('commandstats');
  const by: Record<string, number> = {};
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] === 'info' || m[1] === 'config|resetstat') continue;
    by[m[1]] = Number(m[2]);
    total += Number(m[2]);
  }
  return { total, by };
}

const scrape = async (url: string) => (await fetch(url)).text();

/** The `group` label values of `metric` in a scrape. */
function groupsOf(body: string, metric: string): string[] {
  return [...body.matchAll(new RegExp(`^${metric}\\{[^}]*group="([^"]*)"[^}]*\\} `, 'gm'))].map((m) => m[1]).sort();
}

describe('the metrics sweep', () => {
  it('is shared by scrapes within its interval and by concurrent scrapes', async () => {
    const name = uniqueQueue('sweep');
    const queue = new Queue(name, { connection: redis.server.url });
    open.push(queue);
    await queue.submitBulk([
      { task: 'noop', group: 'a' },
      { task: 'noop', group: 'b' },
    ]);
    const metrics = await serveMetrics({ port: 0, queue, groups: 'all', sweepIntervalMs: 60_000 });
    open.push(metrics);
    // Three scrapes at once: one sweep (one read of each shard's counts).
    const first = await commandsDuring(() => Promise.all([1, 2, 3].map(() => scrape(metrics.url))));
    expect(first.total).toBeGreaterThan(0);
    // (the shard's counts and its tally of cancelled jobs)
    expect(first.by.hgetall).toBe(2);
    // A scrape within the interval sends nothing, and shows what the sweep read.
    let body = '';
    const again = await commandsDuring(async () => {
      body = await scrape(metrics.url);
    });
    expect(again.total).toBe(0);
    expect(body).toContain(`rota_jobs{queue="${name}",state="waiting"} 2`);
  });

  it('sweeps again once its interval has passed', async () => {
    const name = uniqueQueue('sweep');
    const queue = new Queue(name, { connection: redis.server.url });
    open.push(queue);
    await queue.submit({ task: 'noop', group: 'a' });
    // The interval on a clock of the test's own.
    let now = 0;
    const sweep = new MetricsSweep({
      stores: [new MetricsStore(new QueueStore(queue.client, name, { maxEvents: 0 }))],
      shards: 1,
      groups: 'all',
      intervalMs: 1000,
      now: () => now,
    });
    const first = await sweep.read();
    await queue.submit({ task: 'noop', group: 'a' });
    now = 999;
    expect(await sweep.read()).toBe(first);
    expect(first.counts.waiting).toBe(1);
    now = 1000;
    const second = await sweep.read();
    expect(sweep.sweeps).toBe(2);
    expect(second.counts.waiting).toBe(2);
    expect(second.groups).toMatchObject([{ group: 'a', waiting: 2 }]);

    // And through the server, on the real clock.
    const metrics = await serveMetrics({ port: 0, queue, sweepIntervalMs: 1000 });
    open.push(metrics);
    await scrape(metrics.url);
    await queue.submit({ task: 'noop', group: 'a' });
    const waiting = `rota_jobs{queue="${name}",state="waiting"} 3`;
    expect(await eventually(async () => (await scrape(metrics.url)).includes(waiting), 10_000)).toBe(true);
  });

  it('reads 30,000 groups in bounded steps, once per interval however many scrape', async () => {
    const name = uniqueQueue('sweep');
    const queue = new Queue(name, { connection: redis.server.url });
    open.push(queue);
    const GROUPS = 30_000;
    for (let from = 0; from < GROUPS; from += 2000) {
      await queue.submitBulk(Array.from({ length: 2000 }, (_, i) => ({ task: 'noop', group: `g${from + i}` })));
    }
    await queue.submitBulk(Array.from({ length: 5 }, () => ({ task: 'noop', group: 'deep' })));
    const metrics = await serveMetrics({ port: 0, queue, groups: 'top:10', sweepIntervalMs: 60_000 });
    open.push(metrics);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    let body = '';
    const sweep = await commandsDuring(async () => {
      body = await scrape(metrics.url);
    });
    delay.disable();
    // The group records are read an HSCAN of about STEP_FIELDS at a time (COUNT is a hint: allow
    // twice as many a call), and the autoscaling sweep in script calls of a step each.
    expect(sweep.by.hscan).toBeGreaterThanOrEqual(GROUPS / (2 * STEP_FIELDS));
    expect(sweep.by.fcall).toBeGreaterThanOrEqual(AUTOSCALE_SWEEP_FIELDS / STEP_FIELDS);
    // The work of one sweep is bounded: the group steps, and the autoscaling sweep's bounded part
    // (each runnable group swept costs an HSCAN share, the tail of its one list and that job).
    expect(sweep.total).toBeLessThan(GROUPS / STEP_FIELDS + 2 * (AUTOSCALE_SWEEP_FIELDS + 2 * STEP_FIELDS) + 100);
    // Ten groups get series, the deepest first.
    const groups = groupsOf(body, 'rota_group_waiting');
    expect(groups).toHaveLength(10);
    expect(groups).toContain('deep');
    expect(body).toContain(`rota_group_waiting{queue="${name}",group="deep"} 5`);
    // Five more scrapes, two of them at once: no command.
    const more = await commandsDuring(async () => {
      await Promise.all([scrape(metrics.url), scrape(metrics.url)]);
      for (let i = 0; i < 3; i++) await scrape(metrics.url);
    });
    expect(more.total).toBe(0);
    // (a figure, not asserted: timings depend on the machine's load)
    console.info(`longest event-loop delay during a sweep of ${GROUPS} groups: ${(delay.max / 1e6).toFixed(1)} ms`);
  });
});

describe('group labels', () => {
  it('leaves out every group name by default (none)', async () => {
    const name = uniqueQueue('labels');
    const queue = new Queue(name, { connection: redis.server.url });
    open.push(queue);
    const worker = new Worker(name, { noop: () => 'done' }, { connection: redis.server.url });
    const metrics = await serveMetrics({ port: 0, queue, workers: [worker] });
    open.push(metrics, worker);
    const done: Job[] = [];
    worker.on('completed', (j) => done.push(j));
    await queue.submitBulk([
      { task: 'noop', group: 'tenant-a' },
      { task: 'noop', group: 'tenant-b' },
    ]);
    await until(worker, 'completed', () => done.length === 2);
    const body = await scrape(metrics.url);
    expect(body).not.toContain('tenant-');
    expect(body).not.toMatch(/group="/);
    expect(body).not.toContain('rota_group_');
    expect(body).toContain(`rota_submit_to_start_seconds_count{queue="${name}"} 2`);
    expect(body).toContain(`rota_queue_runnable_jobs{queue="${name}"}`);
  });

  it('keeps only the N deepest groups with top:N, the others’ waits under group ""', async () => {
    const name = uniqueQueue('labels');
    const queue = new Queue(name, { connection: redis.server.url });
    open.push(queue);
    for (let n = 1; n <= 5; n++) await queue.submitBulk(Array.from({ length: n }, () => ({ task: 'noop', group: `g${n}` })));
    const metrics = await serveMetrics({ port: 0, queue, groups: 'top:2', sweepIntervalMs: 1000 });
    open.push(metrics);
    const body = await scrape(metrics.url);
    expect(groupsOf(body, 'rota_group_waiting')).toEqual(['g4', 'g5']);
    expect(groupsOf(body, 'rota_group_running')).toEqual(['g4', 'g5']);
    expect(body).toContain(`rota_group_waiting{queue="${name}",group="g5"} 5`);
    expect(body).not.toMatch(/group="g[123]"/);

    // A worker's runs: g5's waits keep their series, g1's go under group "".
    // (the executor starts once the sweep has picked the top 2)
    const worker = new Worker(name, { noop: () => 'done' }, { connection: redis.server.url, concurrency: 5, autorun: false });
    const observed = await serveMetrics({ port: 0, queue, workers: [worker], groups: 'top:2', sweepIntervalMs: 60_000 });
    open.push(observed, worker);
    await scrape(observed.url);
    const done: Job[] = [];
    worker.on('completed', (j) => done.push(j));
    await worker.run();
    await until(worker, 'completed', () => done.length === 15);
    const after = await scrape(observed.url);
    expect(groupsOf(after, 'rota_submit_to_start_seconds_count')).toEqual(['', 'g4', 'g5']);
    expect(after).toContain(`rota_submit_to_start_seconds_count{queue="${name}",group="g5"} 5`);
    expect(after).toContain(`rota_submit_to_start_seconds_count{queue="${name}",group=""} 6`);
  });

  it('drop the waits series of a group that left the top N at the next sweep', async () => {
    const name = uniqueQueue('labels');
    const queue = new Queue(name, { connection: redis.server.url });
    open.push(queue);
    await queue.submitBulk([
      { task: 'noop', group: 'a' },
      { task: 'noop', group: 'a' },
    ]);
    const worker = new Worker(name, { noop: () => 'done' }, { connection: redis.server.url, autorun: false });
    const metrics = await serveMetrics({ port: 0, queue, workers: [worker], groups: 'top:1', sweepIntervalMs: 1000 });
    open.push(metrics);
    await scrape(metrics.url);
    const done: Job[] = [];
    worker.on('completed', (j) => done.push(j));
    await worker.run();
    await until(worker, 'completed', () => done.length === 2);
    await worker.close();
    expect(await scrape(metrics.url)).toContain(`rota_submit_to_start_seconds_count{queue="${name}",group="a"} 2`);
    // Group b is now the deepest: once a sweep has read it, a's series are gone.
    await queue.submitBulk([{ task: 'noop', group: 'b' }]);
    const body = await eventually(async () => {
      const b = await scrape(metrics.url);
      return b.includes(`rota_group_waiting{queue="${name}",group="b"} 1`) && b;
    }, 10_000);
    expect(groupsOf(body, 'rota_group_waiting')).toEqual(['b']);
    expect(body).not.toContain('group="a"');
  });

  it('give each group of a sharded queue what queue.groups() gives, runs in progress included', async () => {
    const name = uniqueQueue('labels');
    const queue = new Queue(name, { connection: redis.server.url, shards: 3 });
    open.push(queue);
    await queue.setGroupLimit('limited', { concurrency: 1, rate: { max: 5, perMs: 2000 } });
    await queue.submitBulk(
      Array.from({ length: 24 }, (_, i) => ({ task: i % 2 ? 'hold' : 'noop', group: i < 4 ? 'limited' : `g${i % 7}` })),
    );
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const worker = new Worker(
      name,
      { hold: () => held.then(() => 'done'), noop: () => 'done' },
      { connection: redis.server.url, shards: 3, concurrency: 4 },
    );
    // (the jobs are released before the executor closes)
    open.push(worker, { close: async () => release() });
    const running = () => queue.counts().then((c) => c.running);
    await eventually(async () => (await running()) === 4, 10_000);
    const metrics = await serveMetrics({ port: 0, queue, groups: 'all', sweepIntervalMs: 60_000 });
    open.push(metrics);
    const body = await scrape(metrics.url);
    const expected = await queue.groups();
    expect(expected.reduce((n, g) => n + g.running, 0)).toBe(4);
    const value = (metric: string, group: string) =>
      Number(new RegExp(`^${metric}\\{queue="${name}",group="${group}"\\} (\\S+)$`, 'm').exec(body)?.[1]);
    expect(groupsOf(body, 'rota_group_waiting')).toEqual(expected.map((g) => g.group).sort());
    for (const g of expected) {
      expect(value('rota_group_waiting', g.group), g.group).toBe(g.waiting);
      expect(value('rota_group_running', g.group), g.group).toBe(g.running);
    }
    expect(value('rota_group_rate_max', 'limited')).toBe(5);
    expect(value('rota_group_rate_window_seconds', 'limited')).toBe(2);
  });

  it('refuses a groups option other than none, all or top:N', async () => {
    const queue = new Queue(uniqueQueue('labels'), { connection: redis.server.url });
    open.push(queue);
    for (const groups of ['top:0', 'top:100001', 'some', 'top:']) {
      await expect(serveMetrics({ port: 0, queue, groups: groups as 'none' })).rejects.toThrow(ValidationError);
    }
    await expect(serveMetrics({ port: 0, queue, sweepIntervalMs: 10 })).rejects.toThrow(/sweepIntervalMs/);
  });
});
