import { afterEach, describe, expect, it } from 'vitest';
import { type Job, Queue, serveMetrics, Worker } from '../../src/index.js';
import { redisUrl, uniqueQueue, until } from '../helpers/setup.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

describe('Prometheus metrics', () => {
  it('exports jobs by state, group depth and submit-to-start waits per group', async () => {
    const name = uniqueQueue('metrics');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    await queue.pauseGroup('held');
    await queue.submitBulk([
      { task: 'noop', group: 'a' },
      { task: 'noop', group: 'a' },
      { task: 'noop', group: 'b' },
      { task: 'noop', group: 'held' },
      { task: 'noop', group: 'held' },
    ]);
    const worker = new Worker(name, { noop: () => undefined }, { connection: redisUrl(), concurrency: 2 });
    open.push(worker);
    const done: Job[] = [];
    worker.on('completed', (j) => done.push(j));
    const metrics = await serveMetrics({ port: 0, host: '127.0.0.1', groups: 'all', queue, workers: [worker] });
    open.push(metrics);
    await until(worker, 'completed', () => done.length === 3);
    const body = await (await fetch(metrics.url)).text();
    expect(body).toContain(`rota_jobs{queue="${name}",state="success"} 3`);
    expect(body).toContain(`rota_jobs{queue="${name}",state="waiting"} 2`);
    expect(body).toContain(`rota_group_waiting{queue="${name}",group="held"} 2`);
    expect(body).toContain(`rota_submit_to_start_seconds_count{queue="${name}",group="a"} 2`);
    expect(body).toContain(`rota_submit_to_start_seconds_count{queue="${name}",group="b"} 1`);
    expect((await fetch(metrics.url.replace('/metrics', '/other'))).status).toBe(404);
  });
});
