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
