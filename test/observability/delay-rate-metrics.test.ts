/**
 * The metrics of delayed jobs and rate limits: jobs delayed, and each rate-limited group's rate
 * (beside the other per-group gauges, filled from the same read).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, Queue, serveMetrics, Worker } from '../../src/index.js';
import { redisUrl, uniqueQueue, until } from '../helpers/setup.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

describe('Prometheus metrics of delays and rates', () => {
  it('exports the delayed jobs and the rate limit of each group that has one', async () => {
    const name = uniqueQueue('metrics');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    await queue.setGroupLimit('api', { rate: { max: 10, perMs: 1500 } });
    await queue.submitBulk([
      { task: 'noop', group: 'api', delay: 60_000 },
      { task: 'noop', group: 'plain' },
    ]);
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', groups: 'all', queue });
    open.push(metrics);
    const body = await (await fetch(metrics.url)).text();
    expect(body).toContain(`rota_jobs{queue="${name}",state="delayed"} 1`);
    expect(body).toContain(`rota_group_rate_max{queue="${name}",group="api"} 10`);
    expect(body).toContain(`rota_group_rate_window_seconds{queue="${name}",group="api"} 1.5`);
    expect(body).toContain(`rota_group_running{queue="${name}",group="plain"} 0`);
    expect(body).not.toMatch(/rota_group_rate_max\{[^}]*group="plain"/);
  });

  it('measures a delayed job’s wait to its start from its due time, in stats() and the histogram', async () => {
    const name = uniqueQueue('metrics');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    const submitted = await queue.submit({ task: 'noop', group: 'later', delay: 1500 });
    const worker = new Worker(name, { noop: () => 'done' }, { connection: redisUrl() });
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', groups: 'all', queue, workers: [worker] });
    open.push(metrics, worker);
    const done: Job[] = [];
    worker.on('completed', (j) => done.push(j));
    await until(worker, 'completed', () => done.length === 1);
    // The executor's job carries its due time, and starts after it.
    const [ran] = done;
    expect(ran.runAt).toBe(submitted.runAt);
    const stored = (await queue.getJob(submitted.id))!;
    expect(ran.started).toBe(stored.started);
    const wait = stored.started! - stored.runAt!;
    expect(stored.started! - stored.submitted).toBeGreaterThanOrEqual(1500);
    expect((await queue.stats()).waitMs.max).toBe(wait);
    const body = await (await fetch(metrics.url)).text();
    const sum = Number(new RegExp(`rota_submit_to_start_seconds_sum\\{queue="${name}",group="later"\\} (\\S+)`).exec(body)?.[1]);
    expect(sum).toBeCloseTo(wait / 1000, 6);
  });
});
