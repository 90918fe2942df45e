/**
 * The counters of the metrics endpoint, against a real Redis: each job and occurrence counted
 * once, where it happened (executor, producer, scheduler), under its queue and task (and its
 * group only when groups are labelled); cancellations, made by any client, from the shards' tally.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, Queue, Scheduler, serveMetrics, Worker } from '../../src/index.js';
import { sampleValue } from '../helpers/metrics-text.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue, until } from '../helpers/setup.js';
import { settings, storeOf } from '../helpers/store.js';

afterEach(closeAll);

describe('metrics counters', () => {
  it('count submits, starts, ends, retries, recoveries and cancellations per queue, task and group', async () => {
    const name = uniqueQueue('counters');
    const queue = track(new Queue(name, { connection: redisUrl() }));
    const worker = track(
      new Worker(
        name,
        {
          ok: () => 'done',
          boom: () => {
            throw new Error('boom');
          },
          hold: ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        },
        { connection: redisUrl(), concurrency: 4, retryDelay: 10, leaseMs: 2000, autorun: false },
      ),
    );
    const metrics = track(await serveMetrics({ port: 0, groups: 'all', sweepIntervalMs: 1000, queue, workers: [worker] }));
    // a job taken by an executor that died at once: its lease (1 ms) has expired
    const raw = rawClient();
    track({ close: async () => void (await raw.quit()) });
    await queue.submit({ task: 'ok', group: 'lost' });
    expect((await storeOf(raw, name).take(1, settings('dead', { leaseMs: 1 }))).jobs).toHaveLength(1);

    await queue.submitBulk([
      { task: 'ok', group: 'a' },
      { task: 'ok', group: 'a' },
      { task: 'boom', group: 'b', maxRetries: 1 },
      { task: 'hold', group: 'b' },
    ]);
    const later = await queue.submit({ task: 'ok', group: 'a', delay: 3_600_000, id: 'later' });
    // an id that exists answers the existing job: no second submit
    await queue.submit({ task: 'ok', group: 'a', id: 'later' });
    expect(await queue.cancel(later.id)).toBe('cancelled');

    const ended: Job[] = [];
    worker.on('completed', (j) => ended.push(j));
    worker.on('failed', (j) => ended.push(j));
    worker.on('cancelled', (j) => ended.push(j));
    worker.on('started', (j) => {
      if (j.task === 'hold') void queue.cancel(j.id);
    });
    await worker.run();
    // ok ×3 (the recovered one's retry included), boom failed after its retry, hold cancelled
    await eventually(async () => ended.length === 5, 30_000);

    const body = await eventually(async () => {
      const b = await (await fetch(metrics.url)).text();
      return sampleValue(b, 'rota_queue_jobs_cancelled_total', { queue: name, task: 'hold' }) === 1 && b;
    }, 20_000);
    const at = (metric: string, task: string, group: string) => sampleValue(body, metric, { queue: name, task, group });
    expect(at('rota_jobs_submitted_total', 'ok', 'lost')).toBe(1);
    expect(at('rota_jobs_submitted_total', 'ok', 'a')).toBe(3);
    expect(at('rota_jobs_submitted_total', 'boom', 'b')).toBe(1);
    expect(at('rota_jobs_recovered_total', 'ok', 'lost')).toBe(1);
    expect(at('rota_jobs_started_total', 'ok', 'a')).toBe(2);
    expect(at('rota_jobs_started_total', 'ok', 'lost')).toBe(1);
    expect(at('rota_jobs_started_total', 'boom', 'b')).toBe(2);
    expect(at('rota_jobs_started_total', 'hold', 'b')).toBe(1);
    expect(at('rota_jobs_succeeded_total', 'ok', 'a')).toBe(2);
    expect(at('rota_jobs_succeeded_total', 'ok', 'lost')).toBe(1);
    expect(at('rota_jobs_retried_total', 'boom', 'b')).toBe(1);
    expect(at('rota_jobs_failed_total', 'boom', 'b')).toBe(1);
    expect(at('rota_jobs_failed_total', 'ok', 'a')).toBeUndefined();
    // the delayed job cancelled at once and the run cancelled, from the tally
    expect(sampleValue(body, 'rota_queue_jobs_cancelled_total', { queue: name, task: 'ok' })).toBe(1);
  });

  it('have no group label with groups none', async () => {
    const name = uniqueQueue('counters');
    const queue = track(new Queue(name, { connection: redisUrl() }));
    const worker = track(new Worker(name, { ok: () => 'done' }, { connection: redisUrl() }));
    const metrics = track(await serveMetrics({ port: 0, queue, workers: [worker] }));
    const done: Job[] = [];
    worker.on('completed', (j) => done.push(j));
    await queue.submitBulk([
      { task: 'ok', group: 'tenant-1' },
      { task: 'ok', group: 'tenant-2' },
    ]);
    await until(worker, 'completed', () => done.length === 2, 20_000);
    const body = await (await fetch(metrics.url)).text();
    expect(sampleValue(body, 'rota_jobs_succeeded_total', { queue: name, task: 'ok' })).toBe(2);
    expect(sampleValue(body, 'rota_jobs_submitted_total', { queue: name, task: 'ok' })).toBe(2);
    expect(body).not.toContain('tenant-');
  });

  it('count periodic occurrences submitted, skipped, missed and excluded, per job task', async () => {
    const name = uniqueQueue('occ');
    let now = Date.parse('2026-12-04T20:30:00Z'); // a Friday
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => now }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    await tasks.upsert({ id: 'h', task: 'hourly', timer: '*:00', exclude: ['Sat,Sun'], catchup: 'latest', overlap: 'allow' });
    await tasks.upsert({ id: 's', task: 'once', timer: '2040-01-01 00:00', overlap: 'skip' });
    // no scheduler until Saturday 10:30: Friday 21:00 to Saturday 09:00 missed but 23:00, which runs; 10:00 excluded
    now = Date.parse('2026-12-05T10:30:00Z');
    const scheduler = track(new Scheduler(name, { connection: redisUrl(), now: () => now, lookaheadMs: 1000 }));
    const metrics = track(await serveMetrics({ port: 0, queue, schedulers: [scheduler] }));
    await scheduler.start();
    const first = await tasks.trigger('s');
    await eventually(async () => (await queue.getJob(first!.jobId))?.state === 'waiting');
    // the triggered job has not run: a second trigger, a second later, is skipped (overlap skip)
    now += 1000;
    await tasks.trigger('s');
    const occ = (task: string, outcome: string, body: string) =>
      sampleValue(body, 'rota_periodic_occurrences_total', { queue: name, task, outcome });
    let b = '';
    const body = await eventually(async () => {
      b = await (await fetch(metrics.url)).text();
      return occ('once', 'skipped', b) === 1 && occ('hourly', 'submitted', b) === 1 && b;
    }, 20_000).catch((err) => {
      throw new Error(
        `${err}: ${b
          .split('\n')
          .filter((l) => l.includes('occurrences'))
          .join('\n')}`,
      );
    });
    expect(occ('once', 'submitted', body)).toBe(1);
    expect(occ('hourly', 'missed', body)).toBe(12);
    expect(occ('hourly', 'excluded', body)).toBe(1);
  });
});
