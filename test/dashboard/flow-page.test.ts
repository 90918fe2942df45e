/** The dashboard's job page on a flow: the parent's state and why it waits, its children (state, links), a child's parent link, and the state's count on the overview. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('dashboard on a flow', () => {
  const name = uniqueQueue('dash-flow');
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

  it('shows the parent waiting for its children, lists them with links, and links a child to its parent', async () => {
    await queue.submitFlow({ id: 'f<1>', task: 'merge', children: [{ task: 'part' }, { task: 'part', onFailure: 'ignore' }] });
    const page = await get(`/jobs/${encodeURIComponent('f<1>')}`);
    expect(page.status).toBe(200);
    // (the id is escaped)
    expect(page.body).not.toContain('f<1>');
    const text = textOf(page.body);
    expect(text).toContain('waiting-children');
    expect(text).toMatch(/Why it waits It runs once its children have ended: 0 of 2 have, 2 pending/);
    expect(text).toMatch(/Flow\s+child\s+task\s+state\s+f&lt;1&gt;\/0\s+part\s+waiting\s+f&lt;1&gt;\/1\s+part\s+waiting/);
    expect(page.body).toContain(`href="/jobs/${encodeURIComponent('f<1>/1')}"`);
    const child = textOf((await get(`/jobs/${encodeURIComponent('f<1>/1')}`)).body);
    expect(child).toMatch(/parent\s+f&lt;1&gt;/);
    expect(child).toMatch(/on failure\s+ignore/);
    const overview = textOf((await get('/')).body);
    expect(overview).toMatch(/waiting-children\s+1/);
  });
});

describe('dashboard on a flow with children in another queue', () => {
  const [a, b] = [uniqueQueue('dash-xa'), uniqueQueue('dash-xb')];
  let qa: Queue;
  let qb: Queue;
  let both: DashboardServer;
  let one: DashboardServer;
  const bothClient = dashboardClient(() => both.url);
  const oneClient = dashboardClient(() => one.url);

  beforeAll(async () => {
    qa = new Queue(a, { connection: redisUrl() });
    qb = new Queue(b, { connection: redisUrl() });
    [both, one] = await Promise.all([
      serveDashboard({ connection: redisUrl(), queues: [a, b], port: 0 }),
      serveDashboard({ connection: redisUrl(), queues: [a], port: 0 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([both?.close(), one?.close()]);
    await Promise.all([qa?.close(), qb?.close()]);
  });

  it("lists them with their state and queue, linking to their queue's job page when the dashboard shows it", async () => {
    const tree = await qa.submitFlow({ task: 'merge', children: [{ task: 'part' }, { task: 'part', queue: b }] });
    const [local, far] = tree.children!.map((c) => c.id);
    expect(await qb.cancel(far)).toBe('cancelled');
    const page = await bothClient.get(`/q/${a}/jobs/${encodeURIComponent(tree.id)}`);
    expect(page.status).toBe(200);
    const text = textOf(page.body);
    expect(text).toContain(`${local} part waiting ${far} in queue ${b} part cancelled`);
    expect(page.body).toContain(`href="/q/${a}/jobs/${encodeURIComponent(local)}"`);
    expect(page.body).toContain(`href="/q/${b}/jobs/${encodeURIComponent(far)}"`);
    const there = textOf((await bothClient.get(`/q/${b}/jobs/${encodeURIComponent(far)}`)).body);
    expect(there).toContain('cancelled');
    // (a dashboard that does not show queue b names it, without a link)
    const alone = await oneClient.get(`/jobs/${encodeURIComponent(tree.id)}`);
    expect(textOf(alone.body)).toContain(`${far} in queue ${b} part cancelled`);
    expect(alone.body).not.toContain(`jobs/${encodeURIComponent(far)}"`);
  });
});
