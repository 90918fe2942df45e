/** A job's dedup key where operators look: the dashboard's job page and `rota job` (escaped: the key is a producer's text). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { rota } from '../helpers/cli.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('a job’s dedup key, shown', () => {
  const name = uniqueQueue('dash-dedup');
  let queue: Queue;
  let served: DashboardServer;
  const { get } = dashboardClient(() => served.url);

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
  });
  afterAll(async () => {
    await served?.close();
    await queue?.close();
  });

  it('on the job page, escaped, with what it holds for and until when', async () => {
    const job = await queue.submit({ task: 't', dedup: { key: '<b>page:7</b>', ttl: 3_600_000, until: 'end' } });
    const page = await get(`/jobs/${job.id}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('&lt;b&gt;page:7&lt;/b&gt;');
    expect(page.body).not.toContain('<b>page:7</b>');
    const text = textOf(page.body);
    expect(text).toContain('dedup key');
    expect(text).toMatch(/held until it ends, at most until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    const plain = await queue.submit({ task: 't' });
    expect(textOf((await get(`/jobs/${plain.id}`)).body)).not.toContain('dedup key');
  });

  it('in rota job, as text and as JSON', async () => {
    const job = await queue.submit({ task: 't', group: 'acme', dedup: { key: 'digest', ttl: 60_000 } });
    const q = ['--redis', redisUrl(), '--queue', name];
    const shown = await rota([...q, 'job', job.id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^ {5}dedup: "digest"$/m);
    expect(shown.stdout).toMatch(/^dedupUntil: ttl$/m);
    expect(shown.stdout).toMatch(/^ dedupEnds: \d{4}-/m);
    const json = JSON.parse((await rota([...q, 'job', job.id, '--json'])).stdout);
    expect(json).toMatchObject({ dedupKey: 'digest', dedupUntil: 'ttl', dedupExpires: job.dedupExpires });
  });
});
