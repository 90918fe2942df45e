/**
 * The metrics of delayed jobs and rate limits: jobs delayed, and each rate-limited group's rate
 * (beside the other per-group gauges, filled from the same read).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, serveMetrics } from '../../src/index.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

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
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', queue });
    open.push(metrics);
    const body = await (await fetch(metrics.url)).text();
    expect(body).toContain(`rota_jobs{queue="${name}",state="delayed"} 1`);
    expect(body).toContain(`rota_group_rate_max{queue="${name}",group="api"} 10`);
    expect(body).toContain(`rota_group_rate_window_seconds{queue="${name}",group="api"} 1.5`);
    expect(body).toContain(`rota_group_running{queue="${name}",group="plain"} 0`);
    expect(body).not.toMatch(/rota_group_rate_max\{[^}]*group="plain"/);
  });
});
