/**
 * Why a job waits, against real groups, a real executor and Redis: the groups page's state of
 * each group (runnable, paused, at limit, rate-parked, no live executor), a waiting job's place
 * in its group's list (bounded: a job past the first MAX_LOOKED is said to be further back), the
 * executors page (version, tasks, concurrency, the jobs each runs), and every new field escaped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { MAX_LOOKED } from '../../src/dashboard/views/job-wait.js';
import { Worker } from '../../src/executor/worker.js';
import { Queue } from '../../src/queue/queue.js';
import { rotaVersion } from '../../src/version.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const HOSTILE_GROUP = `<script>alert("g")</script>`;
const HOSTILE_TASK = `<script>alert("t")</script>`;
const HOSTILE_ID = `<script>alert("j")</script>`;

/** The text of the state cell of group `group`'s row on a groups page. */
function stateOf(body: string, group: string): string {
  const attr = group.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  const row = body.split('<tr data-group="').find((r) => r.startsWith(`${attr}"`));
  if (!row) return '(no row)';
  return textOf(/<td class="status">([\s\S]*?)<\/td>/.exec(row)?.[1] ?? '').trim();
}

describe('why waiting: group states and a waiting job’s place', () => {
  const name = uniqueQueue('why');
  const lonely = uniqueQueue('why-lonely');
  const hostile = uniqueQueue('why-hostile');
  let queue: Queue;
  let lonelyQueue: Queue;
  let hostileQueue: Queue;
  let worker: Worker;
  let hostileWorker: Worker;
  let served: DashboardServer;
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const ids: Record<string, string> = {};
  const { get } = dashboardClient(() => served.url);
  const page = (queueName: string, path: string) => get(`q/${encodeURIComponent(queueName)}${path}`);

  beforeAll(async () => {
    queue = new Queue(name, { connection: redisUrl() });
    lonelyQueue = new Queue(lonely, { connection: redisUrl() });
    hostileQueue = new Queue(hostile, { connection: redisUrl() });
    worker = new Worker(name, { block: async () => gate, quick: async () => 'ok' }, { connection: redisUrl(), concurrency: 2 });
    // A group parked at its rate: one start in ten minutes, two jobs.
    await queue.setGroupLimit('rated', { rate: { max: 1, perMs: 600_000 } });
    ids.rated1 = (await queue.submit({ task: 'quick', group: 'rated' })).id;
    ids.rated2 = (await queue.submit({ task: 'quick', group: 'rated' })).id;
    await eventually(async () => (await queue.getJob(ids.rated1))?.state === 'success');
    // A group at its limit: one run at a time, two jobs that hold their slot.
    await queue.setGroupLimit('limited', { concurrency: 1 });
    ids.lim1 = (await queue.submit({ task: 'block', group: 'limited' })).id;
    ids.lim2 = (await queue.submit({ task: 'block', group: 'limited' })).id;
    await eventually(async () => (await queue.getJob(ids.lim1))?.state === 'running');
    // The executor's other slot taken: the next job of group `free` waits for its turn.
    ids.free1 = (await queue.submit({ task: 'block', group: 'free' })).id;
    await eventually(async () => (await queue.getJob(ids.free1))?.state === 'running');
    ids.free2 = (await queue.submit({ task: 'block', group: 'free' })).id;
    // A paused group with three jobs, and one with more than the place is looked for among.
    await queue.pauseGroup('paused');
    for (const k of [1, 2, 3]) ids[`p${k}`] = (await queue.submit({ task: 'quick', group: 'paused' })).id;
    await queue.pauseGroup('deep');
    const deep = await queue.submitBulk(Array.from({ length: MAX_LOOKED + 5 }, () => ({ task: 'quick', group: 'deep' })));
    ids.deepFirst = deep[0].id;
    ids.deepLast = deep[deep.length - 1].id;
    // A queue no executor serves.
    ids.lonely = (await lonelyQueue.submit({ task: 'quick', group: 'alone' })).id;
    // Hostile names: a group and a task name, with an executor running one of its jobs.
    hostileWorker = new Worker(hostile, { [HOSTILE_TASK]: async () => gate }, { connection: redisUrl(), concurrency: 1 });
    ids.hostileRun = (await hostileQueue.submit({ id: HOSTILE_ID, task: HOSTILE_TASK, group: HOSTILE_GROUP })).id;
    await eventually(async () => (await hostileQueue.getJob(ids.hostileRun))?.state === 'running');
    ids.hostileWait = (await hostileQueue.submit({ task: HOSTILE_TASK, group: HOSTILE_GROUP })).id;
    served = await serveDashboard({ connection: redisUrl(), queues: [name, lonely, hostile], port: 0 });
  }, 30_000);

  afterAll(async () => {
    release();
    await served?.close();
    await worker?.close();
    await hostileWorker?.close();
    await queue?.close();
    await lonelyQueue?.close();
    await hostileQueue?.close();
  });

  it('gives each group its state on the groups page', async () => {
    const body = (await page(name, '/groups?limit=50')).body;
    expect(stateOf(body, 'free')).toBe('runnable');
    expect(stateOf(body, 'paused')).toBe('paused');
    expect(stateOf(body, 'limited')).toBe('at limit (1 running of 1)');
    expect(stateOf(body, 'rated')).toMatch(/^rate-parked until \d\d:\d\d:\d\d UTC \( in (9|10) min \)$/);
    const alone = (await page(lonely, '/groups')).body;
    expect(stateOf(alone, 'alone')).toBe('no live executor');
  });

  it('says where a waiting job stands in its group, and its group’s state', async () => {
    const free = textOf((await page(name, `/jobs/${ids.free2}`)).body);
    expect(free).toContain('Why it waits');
    expect(free).toMatch(/place 1 of 1 in its group's low priority list/);
    expect(free).toMatch(/group state runnable/);
    expect(textOf((await page(name, `/jobs/${ids.p3}`)).body)).toMatch(/place 3 of 3 in .*group state paused/);
    expect(textOf((await page(name, `/jobs/${ids.p1}`)).body)).toMatch(/place 1 of 3 /);
    expect(textOf((await page(name, `/jobs/${ids.lim2}`)).body)).toMatch(/group state at limit \(1 running of 1\)/);
    expect(textOf((await page(name, `/jobs/${ids.rated2}`)).body)).toMatch(
      /group state rate-parked until \d\d:\d\d:\d\d UTC \( in/,
    );
    expect(textOf((await page(lonely, `/jobs/${ids.lonely}`)).body)).toMatch(/group state no live executor/);
    // A job that is not waiting has no such section.
    expect(textOf((await page(name, `/jobs/${ids.free1}`)).body)).not.toContain('Why it waits');
  });

  it('looks for a job among a bounded number of its list’s entries', async () => {
    expect(textOf((await page(name, `/jobs/${ids.deepFirst}`)).body)).toMatch(/place 1 of 10,005 /);
    expect(textOf((await page(name, `/jobs/${ids.deepLast}`)).body)).toContain(
      "not among the 10,000 next of its group's low priority list (of 10,005): it is further back",
    );
  });

  it('lists each executor with its version, tasks, concurrency and the jobs it runs', async () => {
    const r = await page(name, '/executors');
    const row = r.body.split('<tr data-executor="')[1];
    const text = textOf(row);
    expect(text).toContain(rotaVersion());
    expect(rotaVersion()).toMatch(/^\d+\.\d+\.\d+/);
    expect(text).toMatch(/block\s*,\s*quick/);
    expect(/<td class="num">2<\/td>/.test(row)).toBe(true);
    for (const id of [ids.lim1, ids.free1])
      expect(row).toContain(`href="/q/${encodeURIComponent(name)}/jobs/${encodeURIComponent(id)}"`);
    expect(row).not.toContain(ids.free2);
  });

  it('escapes group and task names in every new field', async () => {
    const bodies = [
      (await page(hostile, '/groups')).body,
      (await page(hostile, `/jobs/${encodeURIComponent(ids.hostileWait)}`)).body,
      (await page(hostile, '/executors')).body,
    ];
    for (const body of bodies) {
      expect(body).not.toContain('<script>alert(');
      expect(body).toContain('&lt;script&gt;alert(&quot;');
    }
    expect(stateOf(bodies[0], HOSTILE_GROUP)).toBe('runnable');
    expect(bodies[2]).toContain('&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;');
    expect(bodies[2]).toContain('&lt;script&gt;alert(&quot;g&quot;)&lt;/script&gt;');
    // (the running job's id, as its link's text and in its address)
    expect(bodies[2]).toContain('&lt;script&gt;alert(&quot;j&quot;)&lt;/script&gt;</a>');
    expect(bodies[2]).toContain(`/jobs/${encodeURIComponent(HOSTILE_ID)}"`);
  });
});
