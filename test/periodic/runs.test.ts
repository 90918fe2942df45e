import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, Queue, Scheduler, Worker } from '../../src/index.js';
import { pendingId } from '../../src/periodic/tasks.js';
import { parseEntry } from '../../src/queue/events.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = eventually;

function setup() {
  const name = uniqueQueue('runs');
  const tasks = new PeriodicTasks(name, { connection: redisUrl() });
  const queue = new Queue(name, { connection: redisUrl() });
  track(tasks);
  track(queue);
  const scheduler = async () => {
    const s = new Scheduler(name, { connection: redisUrl() });
    track(s);
    await s.start();
    return s;
  };
  const worker = (handlers: ConstructorParameters<typeof Worker>[1], concurrency = 1) => {
    const w = new Worker(name, handlers, { connection: redisUrl(), concurrency });
    track(w);
    return w;
  };
  return { name, tasks, queue, scheduler, worker };
}

describe('tolerance and timebox (Nuntium)', () => {
  it('drops a run that starts less than interval - tolerance after the previous one, and records it', async () => {
    const { tasks, queue, scheduler, worker } = setup();
    await tasks.upsert({ id: 'poll', task: 'poll', timer: 'every 1s', overlap: 'allow', tolerance: 100, maxRuntime: 5000 });
    const s = await scheduler();
    // No executor for a while: several runs queue up, as in Nuntium's congested queue.
    await until(async () => (await tasks.runs('poll')).length >= 3 && true);
    await tasks.disable('poll');
    await s.close();
    let calls = 0;
    const ended: Job[] = [];
    const w = worker(
      {
        poll: async ({ log }) => {
          calls += 1;
          log('polled');
        },
      },
      4,
    );
    w.on('completed', (j) => ended.push(j));
    w.on('cancelled', (j) => ended.push(j));
    const runs = (await tasks.runs('poll')).filter((r) => r.jobId);
    await until(async () => ended.length === runs.length && true);
    expect(calls).toBe(1);
    const after = await tasks.runs('poll');
    const done = after.filter((r) => r.status === 'success');
    const dropped = after.filter((r) => r.status === 'dropped');
    expect(done.length).toBe(1);
    expect(dropped.length).toBe(runs.length - 1);
    expect(dropped[0].error).toMatch(/dropped: started \d+ ms after the previous run, less than interval - tolerance = 900 ms/);
    expect(done[0].logs![0]).toMatch(/polled$/);
    expect(done[0].host).toBeTruthy();
    expect(done[0].pid).toBe(process.pid);
    expect(done[0].worker).toBe(w.id);
    // the job read back has them too, the pid as a number
    expect(await queue.getJob(done[0].jobId!)).toMatchObject({ host: done[0].host, pid: process.pid });
    expect((await tasks.get('poll'))!.lastrun).toBe(done[0].started);
  });

  it('timebox: an interval task defaults to maxRuntime = interval / 2 and its signal aborts then', async () => {
    const { tasks, queue, scheduler, worker } = setup();
    const t = await tasks.upsert({ id: 'box', task: 'box', timer: 'every 1s' });
    expect(t.maxRuntime).toBe(500);
    const aborted: number[] = [];
    const failed: Job[] = [];
    const w = worker({
      box: ({ signal }) =>
        new Promise((_, reject) => {
          const t0 = Date.now();
          signal.addEventListener('abort', () => {
            aborted.push(Date.now() - t0);
            reject(signal.reason);
          });
        }),
    });
    w.on('failed', (j) => failed.push(j));
    await scheduler();
    await until(async () => failed.length >= 1 && true, 5000);
    expect(aborted[0]).toBeGreaterThanOrEqual(450);
    expect(aborted[0]).toBeLessThan(1000);
    const run = (await tasks.runs('box')).find((r) => r.status === 'failed')!;
    expect(run.error).toMatch(/maxRuntime of 500 ms/);
    // the failed run raised a periodic.failed event on the events stream
    const entries = (await queue.client.xrange(queue.keys.events, '-', '+')) as Array<[string, string[]]>;
    const alerts = entries.flatMap(([sid, f]) => parseEntry(sid, f)).filter((e) => e.event === 'periodic.failed');
    expect(alerts[0]).toMatchObject({ id: run.jobId, state: 'failed', periodic: { task: 'box', occurrence: run.occurrence } });
    expect(alerts[0].error).toMatch(/maxRuntime/);
  });
});

describe('event rules (Toucan)', () => {
  it('one run at event time + delay per subject; a newer event replaces the pending run; removing the rule removes its runs', async () => {
    const { tasks, queue, scheduler } = setup();
    await tasks.rule({ id: 'nudge', after: 'user.last_seen', delay: 'PT1S', task: 'nudge', args: { template: 'inactive' } });
    await tasks.rule({ id: 'later', after: 'user.last_seen', delay: 'P7DT30S', task: 'nudge' });
    const t0 = Date.now();
    await tasks.emit({ event: 'user.last_seen', subject: 'u1', at: t0 });
    await tasks.emit({ event: 'user.last_seen', subject: 'u2', at: t0 });
    await tasks.emit({ event: 'user.last_seen', subject: 'u1', at: t0 + 400 }); // newer: replaces u1's run
    await tasks.emit({ event: 'user.last_seen', subject: 'u1', at: t0 + 100 }); // older, arriving late: ignored
    const upcoming = await tasks.upcoming({ limit: 10 });
    const week = 7 * 86_400_000 + 30_000;
    expect(upcoming.map((u) => u.occurrence)).toEqual([t0 + 1000, t0 + 1400, t0 + week, t0 + week + 400]);
    await scheduler();
    const u1 = pendingId('nudge', 'u1');
    const u2 = pendingId('nudge', 'u2');
    const job1 = await until(() => queue.getJob(`${u1}@${t0 + 1400}`), 5000);
    const job2 = (await queue.getJob(`${u2}@${t0 + 1000}`))!;
    expect(job1.subject).toBe('u1');
    expect(job1.args).toEqual({ template: 'inactive' });
    expect(job1.tracker).toBe(u1);
    expect(job1.submitted).toBeGreaterThanOrEqual(t0 + 1400);
    expect(job2.subject).toBe('u2');
    expect(await queue.getJob(`${u1}@${t0 + 1000}`)).toBeNull();
    // fired pending runs are gone; the 7-day ones wait
    expect(await tasks.get(u1)).toBeNull();
    expect((await tasks.list({ owner: 'rule:later' })).length).toBe(2);
    expect(await tasks.removeRule('later')).toBe(true);
    expect(await tasks.list({ owner: 'rule:later' })).toEqual([]);
    expect(await tasks.upcoming()).toEqual([]);
    expect((await tasks.rules()).map((r) => r.id)).toEqual(['nudge']);
  });
});

describe('owners, enable/disable, trigger', () => {
  it("removeByOwner removes all of an owner's tasks; disable stops firing and enable resumes; trigger runs once now", async () => {
    const { tasks, queue, scheduler } = setup();
    for (const id of ['a', 'b', 'c']) await tasks.upsert({ id, task: 'x', timer: 'daily', owner: 'chan-1' });
    await tasks.upsert({ id: 'd', task: 'x', timer: 'every 1s', owner: 'chan-2', overlap: 'allow' });
    expect((await tasks.removeByOwner('chan-1')).sort()).toEqual(['a', 'b', 'c']);
    expect((await tasks.list()).map((t) => t.id)).toEqual(['d']);
    expect(await tasks.get('a')).toBeNull();
    // (a witness every second: its runs show the scheduler passed the times d would have run at)
    await tasks.upsert({ id: 'witness', task: 'x', timer: 'every 1s', overlap: 'allow' });

    await scheduler();
    await until(async () => (await tasks.runs('d')).length >= 2 && true, 5000);
    expect(await tasks.disable('d')).toBe(true);
    await sleep(100);
    const n = (await tasks.runs('d', { limit: 100 })).length;
    const seen = (await tasks.runs('witness', { limit: 100 })).length;
    await until(async () => (await tasks.runs('witness', { limit: 100 })).length >= seen + 2 && true, 6000);
    expect((await tasks.runs('d', { limit: 100 })).length).toBe(n);
    const off = (await tasks.get('d'))!;
    expect(off.enabled).toBe(false);
    expect((await tasks.upcoming()).filter((u) => u.id === 'd')).toEqual([]);

    const trig = (await tasks.trigger('d'))!;
    const job = await until(() => queue.getJob(trig.jobId), 3000);
    expect(job.occurrence).toBe(trig.occurrence);
    const after = (await tasks.runs('witness', { limit: 100 })).length;
    await until(async () => (await tasks.runs('witness', { limit: 100 })).length >= after + 2 && true, 6000);
    expect((await tasks.runs('d', { limit: 100 })).length).toBe(n + 1); // once, and still disabled
    expect(await tasks.remove('witness')).toBe(true);

    expect(await tasks.enable('d')).toBe(true);
    await until(async () => (await tasks.runs('d', { limit: 100 })).length >= n + 3 && true, 6000);
    expect(await tasks.enable('nope')).toBe(false);
    expect(await tasks.trigger('nope')).toBeNull();
  });
});
