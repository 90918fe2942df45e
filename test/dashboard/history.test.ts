/**
 * The dashboard's history and attempts: the overview's charts and per-task tables read from the
 * history in Redis (written by real executors' finish calls), still there after the dashboard
 * restarts; the per-task figures of known runs; a sharded queue's history, kept in each shard's
 * slot, summed; a job's attempts on its page, escaped.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Worker } from '../../src/executor/worker.js';
import { Queue } from '../../src/queue/queue.js';
import { bucketOf, bucketUpper, historyFields, minuteOf, percentile } from '../../src/redis/history.js';
import { queueKeys } from '../../src/redis/keys.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

/** The overview's hour chart: [minute (s), processed, failed] points. */
function hourSeries(body: string): Array<[number, number, number]> {
  const attr = /id="rate-chart" class="chart" data-series="([^"]*)"/.exec(body)?.[1] ?? '[]';
  return JSON.parse(attr.replace(/&quot;/g, '"')) as Array<[number, number, number]>;
}

/** The cells of a per-task table's row of `task` (the first table holding it: the hour's). */
function taskRow(body: string, task: string): string[] {
  const row = new RegExp(`<tr data-task="${task}">([\\s\\S]*?)</tr>`).exec(body)?.[1] ?? '';
  return [...row.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((m) => m[1]);
}

const sum = (points: Array<[number, number, number]>, i: 1 | 2) => points.reduce((n, p) => n + p[i], 0);

let redis: Redis;
beforeAll(() => {
  redis = rawClient();
});
afterAll(() => redis.disconnect());
afterEach(closeAll);

describe('history', () => {
  it('reads the percentile of a histogram as the upper bound of its bucket', () => {
    expect(bucketOf(0.5)).toBe(0);
    expect(bucketUpper(bucketOf(10))).toBeGreaterThanOrEqual(10);
    expect(bucketUpper(bucketOf(10))).toBeLessThan(10 * 2 ** 0.25);
    const buckets = new Map([
      [bucketOf(10), 90],
      [bucketOf(500), 10],
    ]);
    expect(percentile(buckets, 0.5)).toBe(bucketUpper(bucketOf(10)));
    expect(percentile(buckets, 0.9)).toBe(bucketUpper(bucketOf(10)));
    expect(percentile(buckets, 0.95)).toBe(bucketUpper(bucketOf(500)));
    expect(percentile(new Map(), 0.5)).toBeUndefined();
  });

  it('shows the runs of real executors on the overview, and still does after the dashboard restarts', async () => {
    const name = uniqueQueue('dash-hist');
    const queue = track(new Queue(name, { connection: redisUrl() }));
    const worker = track(
      new Worker(
        name,
        {
          fine: () => 'ok',
          broken: () => {
            throw new Error('no');
          },
        },
        { connection: redisUrl(), concurrency: 4 },
      ),
    );
    let ended = 0;
    for (const e of ['completed', 'failed'] as const) worker.on(e, () => ended++);
    await queue.submitBulk([
      ...Array.from({ length: 12 }, () => ({ task: 'fine' })),
      ...Array.from({ length: 3 }, () => ({ task: 'broken', maxRetries: 0 })),
    ]);
    await eventually(async () => ended === 15);
    let served: DashboardServer = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    const { get } = dashboardClient(() => served.url);
    try {
      const check = async () => {
        const body = (await get('/')).body;
        const hour = hourSeries(body);
        expect(hour).toHaveLength(60);
        expect([sum(hour, 1), sum(hour, 2)]).toEqual([15, 3]);
        expect(taskRow(body, 'fine').slice(0, 2)).toEqual(['fine', '12']);
        expect(taskRow(body, 'broken').slice(0, 5)).toEqual(['broken', '3', '0.05/min', '3', '100.0 %']);
        expect(textOf(body)).toContain('Per task, last 90 days');
      };
      await check();
      await served.close();
      served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
      await check();
    } finally {
      await served.close();
    }
  });

  it('gives each task its processed, rate, failure rate and p50/p95 run time from known runs', async () => {
    const name = uniqueQueue('dash-hist');
    const client = rawClient();
    const store = new QueueStore(client, name, { maxEvents: 100 });
    await store.ready();
    // 40 runs of `mail` (30 of 10 ms, 10 of 300 ms, 4 of those failed) and 2 of `sms`, in two finish calls.
    const runs = [
      ...Array.from({ length: 30 }, () => ({ task: 'mail', group: 'acme', ms: 10, failed: false })),
      ...Array.from({ length: 10 }, (_, i) => ({ task: 'mail', group: 'acme', ms: 300, failed: i < 4 })),
      { task: 'sms', group: 'tenant-b', ms: 0.2, failed: false },
      { task: 'sms', group: 'tenant-b', ms: 0.4, failed: false },
      { task: '<i>x</i>', group: 'acme', ms: 5, failed: false },
    ];
    const settings = { workerId: 'w', countingScheme: [2, 1] as [number, number], leaseMs: 60_000, retryDelay: 1000 };
    const keep = { succeeded: 100, failed: 100 };
    await store.finish(settings, keep, 0, [], 0, historyFields(runs.slice(0, 21)));
    await store.finish(settings, keep, 0, [], 0, historyFields(runs.slice(21)));
    client.disconnect();
    const served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    try {
      const body = (await dashboardClient(() => served.url).get('/')).body;
      const ms = (x: number) => `≤ ${Math.round(bucketUpper(bucketOf(x)))} ms`;
      expect(taskRow(body, 'mail')).toEqual(['mail', '40', '0.67/min', '4', '10.0 %', ms(10), ms(300)]);
      expect(taskRow(body, 'sms')).toEqual(['sms', '2', '0.03/min', '0', '0.0 %', '≤ 1 ms', '≤ 1 ms']);
      // (a task's name is escaped)
      expect(body).toContain('<td>&lt;i&gt;x&lt;/i&gt;</td>');
      expect(body).not.toContain('<i>x</i>');
      // (the day table: the same runs, at a rate per day)
      expect(body.match(/<tr data-task="mail">/g)).toHaveLength(2);
      expect(body).toContain('<td class="num">40/day</td>');
    } finally {
      await served.close();
    }
  });

  it('keeps a sharded queue’s history in each shard’s slot, and sums the shards', async () => {
    const name = uniqueQueue('dash-hist');
    const groups = ['a', 'b', 'c', 'd', 'e', 'f'];
    expect(new Set(groups.map((g) => shardOfGroup(g, 2))).size).toBe(2);
    const queue = track(new Queue(name, { connection: redisUrl(), shards: 2 }));
    const worker = track(new Worker(name, { work: () => 'ok' }, { connection: redisUrl(), shards: 2 }));
    let ended = 0;
    worker.on('completed', () => ended++);
    await queue.submitBulk(groups.flatMap((group) => Array.from({ length: 4 }, () => ({ task: 'work', group }))));
    await eventually(async () => ended === 24);
    const minute = minuteOf(Number((await redis.time())[0]) * 1000);
    const perShard = await Promise.all(
      [0, 1].map(async (s) => {
        const counts = await Promise.all([minute - 1, minute].map((m) => redis.hgetall(queueKeys(name, s, 2).historyMinute(m))));
        return counts.flatMap((h) => Object.values(h)).reduce((n, v) => n + Number(v), 0);
      }),
    );
    expect(perShard.every((n) => n > 0)).toBe(true);
    expect(perShard[0] + perShard[1]).toBe(24);
    const served = await serveDashboard({ connection: redisUrl(), queues: [name], shards: 2, port: 0 });
    try {
      const body = (await dashboardClient(() => served.url).get('/')).body;
      expect(sum(hourSeries(body), 1)).toBe(24);
      expect(taskRow(body, 'work').slice(0, 2)).toEqual(['work', '24']);
    } finally {
      await served.close();
    }
  });

  it('shows a job’s attempts on its page, escaped', async () => {
    const name = uniqueQueue('dash-hist');
    const queue = track(new Queue(name, { connection: redisUrl() }));
    let n = 0;
    track(
      new Worker(
        name,
        {
          flaky: () => {
            n += 1;
            if (n < 3) throw new Error(`<img src=x onerror=alert(${n})>`);
            return 'ok';
          },
        },
        { connection: redisUrl(), retryDelay: 0 },
      ),
    );
    const job = await queue.submit({ task: 'flaky', maxRetries: 5 });
    await eventually(async () => (await queue.getJob(job.id))?.state === 'success');
    const served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    try {
      const body = (await dashboardClient(() => served.url).get(`/jobs/${encodeURIComponent(job.id)}`)).body;
      const table = /<table class="attempts">([\s\S]*?)<\/table>/.exec(body)?.[1] ?? '';
      expect(table.match(/<tr><td class="num">/g)).toHaveLength(3);
      expect(table).toContain('state-success');
      expect(table).toContain('&lt;img src=x onerror=alert(2)&gt;');
      expect(table).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(body).not.toContain('<img src=x');
      expect(textOf(body)).toContain('Attempts 3 runs');
    } finally {
      await served.close();
    }
  });
});
