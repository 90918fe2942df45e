/**
 * The dashboard of a sharded queue (shards: 3): the counts add up over every shard store (the home
 * shard's included), a group's row adds up its shard and the home shard (where its periodic runs
 * are) with its own shard's settings, job lists page across the shards (each job once, in the
 * list's order), and the job page and its actions reach the job's shard.
 */
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { PermanentError } from '../../src/errors.js';
import { Worker } from '../../src/executor/worker.js';
import { Scheduler } from '../../src/periodic/scheduler.js';
import { PeriodicTasks } from '../../src/periodic/tasks.js';
import { Queue } from '../../src/queue/queue.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { eventually, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';

const SHARDS = 3;
/** Four groups in each shard. */
const GROUPS = Array.from({ length: 100 }, (_, i) => `tenant-${i}`)
  .filter((g, _, all) => all.filter((o) => shardOfGroup(o, SHARDS) === shardOfGroup(g, SHARDS)).indexOf(g) < 4)
  .sort((a, b) => shardOfGroup(a, SHARDS) - shardOfGroup(b, SHARDS));

/** The job ids a job list page shows, in its order, and its next page's link. */
function listed(body: string): { ids: string[]; next?: string } {
  const ids = [...body.matchAll(/<tr><td class="mono"><a href="[^"]+">([^<]+)</g)].map((m) => m[1]);
  const next = /<a href="([^"]+)">next →<\/a>/.exec(body)?.[1].replace(/&amp;/g, '&');
  return { ids, next };
}

describe('dashboard of a sharded queue', () => {
  const name = uniqueQueue('dash-shards');
  let queue: Queue;
  let tasks: PeriodicTasks;
  let scheduler: Scheduler;
  let served: DashboardServer;
  let redis: Redis;
  const { get, act } = dashboardClient(() => served.url);
  /** The ids of every page of a job list, following its next links. */
  const walk = async (first: string) => {
    const seen: string[][] = [];
    let path: string | undefined = first;
    while (path) {
      const page = listed((await get(path)).body);
      seen.push(page.ids);
      path = page.next;
      if (seen.length > 50) throw new Error('no last page');
    }
    return seen;
  };
  /** Submitted per group: 5 waiting jobs, 1 cancelled and 1 delayed. */
  const waiting: string[] = [];
  const cancelled: string[] = [];
  let periodicRun = '';

  beforeAll(async () => {
    redis = rawClient();
    queue = new Queue(name, { connection: redisUrl(), shards: SHARDS });
    tasks = new PeriodicTasks(name, { connection: redisUrl(), shards: SHARDS });
    for (const group of GROUPS) {
      const jobs = await queue.submitBulk(Array.from({ length: 6 }, () => ({ task: 'work', group })));
      waiting.push(...jobs.slice(0, 5).map((j) => j.id));
      await queue.cancel(jobs[5].id);
      cancelled.push(jobs[5].id);
      await queue.submit({ task: 'work', group, delay: 3_600_000 });
    }
    // A periodic run of the first group: in the home shard, beside its task.
    await tasks.upsert({ id: 'nightly', task: 'work', group: GROUPS[0], timer: 'every 1h' });
    scheduler = new Scheduler(name, { connection: redisUrl(), shards: SHARDS });
    await scheduler.start();
    await tasks.trigger('nightly');
    const run = await eventually(async () => (await tasks.runs('nightly')).find((r) => r.status === 'waiting'));
    periodicRun = run.jobId!;
    waiting.push(periodicRun);
    served = await serveDashboard({ connection: redisUrl(), queues: [name], shards: SHARDS, port: 0 });
  });

  afterAll(async () => {
    await served?.close();
    await scheduler?.close();
    await queue?.close();
    await tasks?.close();
    redis?.disconnect();
  });

  it('holds jobs in every shard and the home shard', async () => {
    const perShard = await Promise.all(queue.shardKeys.map((k) => redis.hget(k.counts, 'waiting')));
    expect(perShard.map(Number)).toEqual([20, 20, 20, 1]);
  });

  it('counts every shard on the overview and the live tick', async () => {
    const counts = await queue.counts();
    expect(counts).toMatchObject({ waiting: waiting.length, cancelled: cancelled.length, delayed: GROUPS.length });
    const overview = (await get('/')).body;
    for (const [state, n] of Object.entries({ waiting: waiting.length, cancelled: cancelled.length, delayed: GROUPS.length })) {
      expect(overview, state).toMatch(new RegExp(`<b data-count="${state}">${n}</b>`));
    }
    const { tick } = JSON.parse((await get('/api/tick')).body) as { tick: { counts: Record<string, number> } };
    expect(tick.counts).toMatchObject({ waiting: waiting.length, cancelled: cancelled.length, delayed: GROUPS.length });
  });

  it("adds up a group's shard and the home shard, with its own shard's settings", async () => {
    const own = GROUPS[0];
    expect(shardOfGroup(own, SHARDS)).toBe(0);
    expect((await act('group/pause', { group: own })).status).toBe(200);
    const row = /<tr data-group="[^"]+">([\s\S]*?)<\/tr>/.exec((await get(`/groups?group=${own}`)).body)![1];
    // waiting 6 (5 in its shard, its periodic run in the home shard), high 0, low 6, released 0, running 0, stuck 0
    expect(textOf(row)).toMatch(new RegExp(`^ ${own} 6 0 6 0 0 0 `));
    expect(row).toContain('<span class="paused">paused</span>');
    expect((await queue.groups()).find((g) => g.group === own)).toMatchObject({ waiting: 6, paused: true });
    // Every group is listed once, the whole index over the shards.
    const all = await eventually(async () => {
      const body = (await get('/groups?sort=group&dir=asc&limit=500')).body;
      const names = [...body.matchAll(/<tr data-group="([^"]+)">/g)].map((m) => m[1]);
      return names.length === GROUPS.length && names;
    }, 15_000);
    expect(all).toEqual([...GROUPS].sort());
    const body = (await get('/groups?sort=waiting&dir=desc&limit=1')).body;
    expect(/<tr data-group="([^"]+)">/.exec(body)?.[1]).toBe(own);
    expect(textOf(body)).toContain(`${GROUPS.length} with jobs, runs or settings`);
    expect((await act('group/resume', { group: own })).status).toBe(200);
    expect((await queue.groups()).find((g) => g.group === own)?.paused).toBe(false);
  });

  it('pages a job list across the shards: every job once, in the list order', async () => {
    const waitingPages = await walk('/jobs?state=waiting&limit=7');
    expect(waitingPages.length).toBeGreaterThan(8);
    expect(waitingPages.flat().sort()).toEqual([...waiting].sort());
    // (executors take from the shards in turn: so does the list of waiting jobs)
    const firstPage = waitingPages[0];
    const shards = await Promise.all(
      firstPage.map(async (id) => (await Promise.all(queue.shardKeys.map((k) => redis.exists(k.job(id))))).indexOf(1)),
    );
    expect(new Set(shards.slice(0, 3)).size).toBe(3);

    const cancelledPages = await walk('/jobs?state=cancelled&limit=5');
    const ids = cancelledPages.flat();
    expect([...ids].sort()).toEqual([...cancelled].sort());
    // newest first over every shard
    const finished = await Promise.all(ids.map(async (id) => (await queue.getJob(id))!.finished!));
    expect(finished).toEqual([...finished].sort((a, b) => b - a));

    // A group's list reads its shard and the home shard.
    const own = listed((await get(`/jobs?state=waiting&group=${GROUPS[0]}`)).body).ids;
    expect(own).toHaveLength(6);
    expect(own).toContain(periodicRun);
  });

  it("shows a job and acts on it in the job's shard", async () => {
    const last = GROUPS.at(-1)!;
    const job = await queue.submit({ task: 'work', group: last });
    expect(shardOfGroup(last, SHARDS)).toBe(2);
    const page = textOf((await get(`/jobs/${job.id}`)).body);
    expect(page).toContain(`group ${last}`);
    expect((await act('job/cancel', { id: job.id })).body).toContain(`Job ${job.id}: cancelled.`);
    expect((await queue.getJob(job.id))?.state).toBe('cancelled');
    expect((await act('job/retry', { id: job.id })).body).toContain(`Job ${job.id}: waiting.`);
    expect((await queue.getJob(job.id))?.state).toBe('waiting');
    waiting.push(job.id);
    const run = textOf((await get(`/jobs/${encodeURIComponent(periodicRun)}`)).body);
    expect(run).toContain('periodic task nightly');
  });

  it('a dashboard configured with another shard count than the queue has answers its pages with the ShardCountError', async () => {
    const wrong = await serveDashboard({ connection: redisUrl(), queues: [name], shards: 2, port: 0 });
    try {
      const r = await fetch(new URL('jobs', wrong.url));
      expect(r.status).toBe(500);
      expect(textOf(await r.text())).toContain(`has 3 shards, but this part of Rota is configured with shards: 2`);
    } finally {
      await wrong.close();
    }
  });

  it('lists the failed jobs of every shard, retries them all, and shows the executor that took from every shard', async () => {
    const worker = new Worker(
      name,
      {
        work: async () => {
          throw new PermanentError('refused');
        },
      },
      { connection: redisUrl(), shards: SHARDS, concurrency: 8 },
    );
    try {
      await worker.run();
      await eventually(async () => (await queue.counts()).failed === waiting.length, 20_000);
      await eventually(async () => (await get('/executors')).body.includes(worker.id), 10_000);
      expect(textOf((await get('/executors')).body)).toContain('Executors 1 live');
    } finally {
      await worker.close();
    }
    const failed = (await walk('/jobs?state=failed&limit=9')).flat();
    expect([...failed].sort()).toEqual([...waiting].sort());
    const finished = await Promise.all(failed.map(async (id) => (await queue.getJob(id))!.finished!));
    expect(finished).toEqual([...finished].sort((a, b) => b - a));
    const retried = await act('jobs/retry-failed', {});
    expect(JSON.parse(retried.body).message).toBe(`${waiting.length} failed jobs retried.`);
    expect(await queue.counts()).toMatchObject({ failed: 0, waiting: waiting.length });
  });
});

describe('dashboard of a queue whose reshard was killed', () => {
  it('answers every page, action and live view with the ReshardInProgressError, and reads the queue again once it is finished', async () => {
    const name = uniqueQueue('dash-reshard');
    const redis = rawClient();
    const queue = new Queue(name, { connection: redisUrl() });
    const [job] = await queue.submitBulk(Array.from({ length: 30 }, (_, i) => ({ task: 'work', group: `tenant-${i % 6}` })));
    const served = await serveDashboard({ connection: redisUrl(), queues: [name], port: 0 });
    const { get } = dashboardClient(() => served.url);
    const stream = new AbortController();
    try {
      const before = await fetch(new URL('groups', served.url));
      const csrf = /<meta name="csrf" content="([0-9a-f]+)">/.exec(await before.text())![1];
      const cookie = before.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const live = await fetch(new URL('live?view=%2F', served.url), { signal: stream.signal });
      const events = live.body!.pipeThrough(new TextDecoderStream()).getReader();
      // As `rota reshard --to 4` leaves it when killed after its first step.
      await redis.hset(`{rota:${name}}:meta`, 'reshard', '4');
      const refused = /is being resharded from 1 to 4 shards/;
      for (const path of ['/', '/groups', '/jobs?state=waiting', `/jobs/${job.id}`, '/executors', '/periodic', '/api/tick']) {
        const r = await get(path);
        expect(r.status, path).toBe(503);
        expect(textOf(r.body), path).toMatch(refused);
      }
      const action = await fetch(new URL('actions/jobs/retry-failed', served.url), {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ _csrf: csrf }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      });
      expect(action.status).toBe(503);
      // the open overview is replaced by the refusal at the reader's next tick
      let seen = '';
      while (!refused.test(seen)) {
        const { value, done } = await events.read();
        if (done) throw new Error(`the live stream ended before the refusal: ${seen}`);
        seen += value;
      }
      expect(seen).toMatch(/event: view\ndata: ".*is being resharded from 1 to 4 shards/);
      await redis.hdel(`{rota:${name}}:meta`, 'reshard');
      expect((await get('/jobs?state=waiting')).status).toBe(200);
    } finally {
      stream.abort();
      await served.close();
      await queue.close();
      redis.disconnect();
    }
  });
});
