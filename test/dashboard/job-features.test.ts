/**
 * The dashboard on the job features: delayed jobs (listed in due order with their runAt, the
 * groups parked at their rate in the same set passed over), groups' rate limits (shown, set and
 * lifted from the page), a group with runs and nothing waiting listed, groups sorted on their
 * oldest waiting job, fan-out children counts
 * and the parent link, progress (shown; progress events do not crowd the takes out of the
 * fairness view), the delayed count on the overview, and event rules' pending runs and replaced
 * runs on the periodic pages.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Worker } from '../../src/executor/worker.js';
import { Scheduler } from '../../src/periodic/scheduler.js';
import { PeriodicTasks, pendingId } from '../../src/periodic/tasks.js';
import { Queue } from '../../src/queue/queue.js';
import { QueueStore } from '../../src/redis/queue-store.js';
import { GROUP_DUE_MARK } from '../../src/redis/wire.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { eventually, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('dashboard on delayed jobs, rates, fan-out, progress and event rules', () => {
  const name = uniqueQueue('dash-jobs');
  let queue: Queue;
  let tasks: PeriodicTasks;
  let worker: Worker;
  let scheduler: Scheduler;
  let served: DashboardServer;
  let redis: Redis;
  let release: () => void = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });

  const { get, act } = dashboardClient(() => served.url);

  beforeAll(async () => {
    redis = rawClient();
    queue = new Queue(name, { connection: redisUrl() });
    tasks = new PeriodicTasks(name, { connection: redisUrl() });
    worker = new Worker(
      name,
      {
        quick: async () => 'ok',
        long: async (ctx) => {
          ctx.progress(42);
          await held;
        },
        parent: async (ctx) => {
          await ctx.fanOut(['a', 'b', 'c'], { task: 'quick', group: 'kids' });
        },
        winback: async () => 'sent',
      },
      { connection: redisUrl(), concurrency: 4 },
    );
    served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
  });

  afterAll(async () => {
    release();
    await served?.close();
    await scheduler?.close();
    await worker?.close();
    await queue?.close();
    await tasks?.close();
    redis?.disconnect();
  });

  it('lists delayed jobs in due order with their runAt, passing over the groups parked at their rate', async () => {
    // A group at its rate (one start a minute) is parked in `delayed` beside the delayed jobs.
    await queue.setGroupLimit('parked', { rate: { max: 1, perMs: 60_000 } });
    await queue.submitBulk([
      { task: 'quick', group: 'parked' },
      { task: 'quick', group: 'parked' },
    ]);
    await eventually(async () => (await redis.zrange(queue.keys.delayed, 0, -1)).some((m) => m.startsWith(GROUP_DUE_MARK)));
    const now = Date.now();
    const later = await queue.submit({ task: 'quick', group: 'acme', runAt: now + 7_200_000 });
    const sooner = await queue.submit({ task: 'quick', group: 'acme', delay: 3_600_000 });
    const r = await get('/jobs?state=delayed');
    expect(r.status).toBe(200);
    const ids = [...r.body.matchAll(/<tr><td class="mono"><a href="[^"]+">([^<]+)</g)].map((m) => m[1]);
    expect(ids).toEqual([sooner.id, later.id]);
    expect(r.body).not.toContain('cannot be listed');
    // (two hours less the time the test took reads as 2 h, not 120 min)
    expect(textOf(r.body)).toMatch(/ due .*in 60 min.*in 2 h/);
    // The detail page shows when it becomes waiting.
    const detail = textOf((await get(`/jobs/${sooner.id}`)).body);
    expect(detail).toContain(
      `delayed until ${new Date((await queue.getJob(sooner.id))!.runAt!).toISOString().slice(0, 19).replace('T', ' ')} UTC`,
    );
    // The overview counts them among the states.
    await eventually(async () => {
      const overview = (await get('/')).body;
      return /<a class="card state-delayed"[^>]*><span>delayed<\/span><b data-count="delayed">2<\/b>/.test(overview);
    }, 15_000);
  });

  it("shows a group's rate limit, and sets and lifts it from the page", async () => {
    await queue.submit({ task: 'quick', group: 'rl', delay: 600_000 });
    await queue.setGroupLimit('rl', { concurrency: 3 });
    expect((await act('group/settings', { group: 'rl', limit: '3', weight: '2', rate: '10/1s' })).status).toBe(200);
    let info = (await queue.groups()).find((g) => g.group === 'rl');
    expect(info).toMatchObject({ limit: 3, weight: 2, rate: { max: 10, perMs: 1000 } });
    const page = await get('/groups?group=rl');
    expect(page.body).toMatch(/<td class="num rate">10\/1s<\/td>/);
    expect(page.body).toContain('name="rate" size="7" placeholder="10/1s" value="10/1s"');
    // A bad rate is refused and changes nothing; an empty one lifts it.
    const bad = await act('group/settings', { group: 'rl', limit: '5', rate: '10 per second' });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('rate');
    info = (await queue.groups()).find((g) => g.group === 'rl');
    expect(info).toMatchObject({ limit: 3, rate: { max: 10, perMs: 1000 } });
    expect((await act('group/settings', { group: 'rl', limit: '3', weight: '2', rate: '' })).status).toBe(200);
    info = (await queue.groups()).find((g) => g.group === 'rl');
    expect(info?.rate).toBeNull();
    expect((await get('/groups?group=rl')).body).toMatch(/<td class="num rate">none<\/td>/);
  });

  it('sorts the groups on their oldest waiting job', async () => {
    const names = ['old-c', 'old-a', 'old-b'];
    // Paused (so that they keep waiting), submitted one after the other: old-c waits longest.
    for (const g of names) {
      await queue.pauseGroup(g);
      await queue.submit({ task: 'quick', group: g });
      await new Promise((r) => setTimeout(r, 5));
    }
    const order = async (dir: string) => {
      const body = (await get(`/groups?sort=oldest&dir=${dir}&limit=500`)).body;
      return [...body.matchAll(/<tr data-group="([^"]+)">/g)].map((m) => m[1]).filter((g) => names.includes(g));
    };
    // (the index learns each group's oldest job from the reader's sweep, a tick or so later)
    await eventually(async () => (await order('desc')).join() === 'old-c,old-a,old-b', 15_000);
    expect(await order('asc')).toEqual(['old-b', 'old-a', 'old-c']);
    expect((await get('/groups?sort=oldest')).body).toContain('class="sorted desc">oldest wait</a>');
  });

  it('shows a fan-out parent with its children by state, and a child with its parent', async () => {
    const parent = await queue.submit({ task: 'parent', group: 'fan' });
    await eventually(async () => (await queue.getJob(parent.id))?.children?.ended !== undefined, 30_000);
    const page = textOf((await get(`/jobs/${parent.id}`)).body);
    expect(page).toMatch(/children total 3 waiting 0 running 0 success 3 failed 0 cancelled 0 all ended/);
    const child = await get(`/jobs/${encodeURIComponent(`${parent.id}/1`)}`);
    expect(child.body).toContain(`<a href="/jobs/${encodeURIComponent(parent.id)}">${parent.id}</a>`);
    expect(textOf(child.body)).toContain(`parent ${parent.id}`);
  });

  it('lists a group with a run and nothing waiting, shows its progress, and counts its runs in the fairness view whatever the progress events', async () => {
    // Takes of group "fair", then a run that reports progress many times (more events than the
    // fairness view reads).
    const quick = await queue.submitBulk(Array.from({ length: 5 }, () => ({ task: 'quick', group: 'fair' })));
    await eventually(async () => (await Promise.all(quick.map((j) => queue.getJob(j.id)))).every((j) => j?.state === 'success'));
    const long = await queue.submit({ task: 'long', group: 'runonly' });
    await eventually(async () => (await queue.getJob(long.id))?.progress === 42, 15_000);
    const store = new QueueStore(redis, name, { maxEvents: 10_000 });
    for (let i = 0; i < 300; i++) await store.progress([{ id: long.id, progress: i % 100 }]);

    const groups = await get('/groups?sort=running&dir=desc');
    const first = /<tr data-group="([^"]+)">/.exec(groups.body)?.[1];
    expect(first).toBe('runonly');
    const row = /<tr data-group="runonly">([\s\S]*?)<\/tr>/.exec(groups.body)![1];
    // waiting 0, high 0, low 0, released 0, running 1
    expect(textOf(row)).toMatch(/^ runonly 0 0 0 0 1 0 /);
    // (the fairness view counts the runs that ended, from the per-group history: progress events
    // are nothing to it; a window's read is kept 5 s, so an earlier page's read may be shown first)
    const fairness = await eventually(async () => {
      const body = (await get('/groups')).body;
      const text = textOf(/<section class="fairness"[^>]*>([\s\S]*?)<\/section>/.exec(body)![1]);
      return / fair [\d.]+% 5 /.test(text) ? text : null;
    }, 15_000);
    expect(fairness).not.toContain('No run ended');

    const detail = textOf((await get(`/jobs/${long.id}`)).body);
    expect(detail).toMatch(/progress 99 /);
    const list = textOf((await get('/jobs?state=running&group=runonly')).body);
    expect(list).toContain(`${long.id} long runonly running`);
  });

  it("shows an event rule's pending runs, and a replaced run with the run that replaced it", async () => {
    await tasks.rule({ id: 'later', after: 'user.left', delay: 'PT1H', task: 'winback' });
    await tasks.emit({ event: 'user.left', subject: 'u1' });
    await tasks.emit({ event: 'user.left', subject: 'u2' });
    await tasks.rule({ id: 'wb', after: 'user.seen', delay: 'PT2S', task: 'winback' });
    scheduler = new Scheduler(name, { connection: redisUrl(), lookaheadMs: 2500, claimTtlMs: 4500 });
    await scheduler.start();
    const t0 = Date.now();
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t0 });
    const id = pendingId('wb', 'u1');
    // the first run is staged at once (2 s is inside the look-ahead); a newer event replaces it
    await eventually(async () => (await redis.zrange(tasks.keys.staged, 0, -1)).some((m) => m.slice(1).startsWith(`${id}@`)));
    const t1 = t0 + 1000;
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t1 });
    await eventually(async () => (await tasks.runs(id)).some((r) => r.status === 'success'), 15_000);

    const list = await get('/periodic');
    const rule = textOf(/<tr data-rule="later">([\s\S]*?)<\/tr>/.exec(list.body)![1]);
    expect(rule).toContain('2 pending');
    expect(list.body).toContain(`pending run of rule later`);
    // Once released, the pending run's task is gone: its page still shows its history.
    await eventually(async () => (await tasks.get(id)) === null);
    const page = await get(`/periodic/${encodeURIComponent(id)}`);
    expect(page.status).toBe(200);
    const text = textOf(page.body);
    expect(text).toContain('This task is gone');
    const replacedAt = new Date(t1 + 2000).toISOString().slice(0, 19).replace('T', ' ');
    expect(text).toMatch(new RegExp(`replaced by the run planned for ${replacedAt} UTC`));
    expect(page.body).toContain('<span class="status status-replaced">replaced</span>');
    expect(page.body).toContain('<span class="status status-success">success</span>');
    // A name that cannot be a task id is refused, not an error of the server.
    expect((await get(`/periodic/${encodeURIComponent('bad id with spaces')}`)).status).toBe(400);
  });
});
