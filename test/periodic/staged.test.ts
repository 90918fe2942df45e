/**
 * Changing a task, or replacing an event rule's run, while its occurrence is already staged (a
 * running scheduler claims and stages occurrences up to its look-ahead before they are due).
 * "Never runs" is checked against a sentinel task due later: the release takes staged
 * occurrences in time order, so once the sentinel has run, an earlier occurrence would have too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type JobContext, PeriodicTasks, Queue, Scheduler, Worker } from '../../src/index.js';
import { pendingId } from '../../src/periodic/tasks.js';
import { periodicKeys } from '../../src/redis/keys.js';
import { rota } from '../helpers/cli.js';
import { closeAll, redisUrl, track, uniqueQueue, eventually as until } from '../helpers/setup.js';

afterEach(closeAll);

const LOOKAHEAD = 4000;

function setup() {
  const name = uniqueQueue('staged');
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
  const queue = track(new Queue(name, { connection: redisUrl() }));
  const keys = periodicKeys(name);
  const ran: Array<{ id: string; task: string; occurrence?: number }> = [];
  const record = async ({ job }: JobContext) => {
    ran.push({ id: job.id, task: job.task, occurrence: job.occurrence });
  };
  track(new Worker(name, { winback: record, report: record, sentinel: record }, { connection: redisUrl(), concurrency: 4 }));
  const scheduler = async (lookaheadMs = LOOKAHEAD) => {
    const s = track(new Scheduler(name, { connection: redisUrl(), lookaheadMs, claimTtlMs: lookaheadMs + 2000 }));
    await s.start();
    return s;
  };
  /** Staged, not released, occurrences of a task (p:staged members name `<task id>@<occurrence>`). */
  const stagedOf = async (id: string) =>
    (await queue.client.zrange(keys.staged, 0, -1)).filter((m) => m.slice(1).startsWith(`${id}@`));
  const at = (ms: number) => new Date(ms).toISOString();
  /** A one-shot task due at `when`; resolves once its run has ended. */
  const sentinel = async (when: number) => {
    await tasks.upsert({ id: 'sentinel', task: 'sentinel', timer: at(when), overlap: 'allow' });
    return () => until(async () => ran.some((r) => r.task === 'sentinel'), 15_000);
  };
  return { name, tasks, queue, ran, scheduler, stagedOf, at, sentinel };
}

describe('event rules: a newer event replaces a staged run', () => {
  it('the second event arrives inside the look-ahead: exactly one run, at the newer time; the history says which replaced which', async () => {
    const { name, tasks, ran, scheduler, stagedOf } = setup();
    await tasks.rule({ id: 'wb', after: 'user.seen', delay: 'PT2S', task: 'winback' });
    await scheduler(2500);
    const t0 = Date.now();
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t0 });
    const id = pendingId('wb', 'u1');
    // the first run is claimed and staged at once (2 s < the 2.5 s look-ahead)
    await until(async () => (await stagedOf(id)).length === 1, 5000);
    const t1 = t0 + 1000;
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t1 });
    expect(await stagedOf(id)).not.toContain(`A${id}@${t0 + 2000}`);
    await until(async () => ran.some((r) => r.task === 'winback'), 10_000);
    // the older run was due first: had it been released, it would have run before the newer one
    expect(ran.filter((r) => r.task === 'winback')).toEqual([
      { id: `${id}@${t1 + 2000}`, task: 'winback', occurrence: t1 + 2000 },
    ]);
    const runs = await tasks.runs(id);
    expect(runs.map((r) => [r.occurrence, r.status, r.replacedBy])).toEqual([
      [t1 + 2000, 'success', undefined],
      [t0 + 2000, 'replaced', t1 + 2000],
    ]);
    // the pending-run task went with its run; its history stays (the CLI shows it), so an older
    // event arriving late is ignored
    await until(async () => (await tasks.get(id)) === null, 5000);
    const cli = await rota(['--redis', redisUrl(), '--queue', name, '--utc', 'periodic', 'runs', id]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`replaced (replaced by ${new Date(t1 + 2000).toISOString()}`);
    expect(await tasks.emit({ event: 'user.seen', subject: 'u1', at: t0 + 500 })).toEqual([id]);
    expect(await tasks.get(id)).toBeNull();
    expect(await tasks.upcoming()).toEqual([]);
  });

  it('a newer event after the older run was released does not undo it, and the history says which replaced which', async () => {
    const { tasks, queue, ran, scheduler } = setup();
    await tasks.rule({ id: 'wb', after: 'user.seen', delay: 'PT1S', task: 'winback' });
    await scheduler(2500);
    const t0 = Date.now();
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t0 });
    const id = pendingId('wb', 'u1');
    await until(async () => (await queue.getJob(`${id}@${t0 + 1000}`))?.state === 'success', 10_000);
    // an event from before that run was due, delivered after it ran: it plans its own run
    const t1 = t0 + 800;
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t1 });
    await until(async () => (await queue.getJob(`${id}@${t1 + 1000}`))?.state === 'success', 10_000);
    expect(ran.map((r) => r.occurrence)).toEqual([t0 + 1000, t1 + 1000]);
    const runs = await tasks.runs(id);
    expect(runs.map((r) => [r.occurrence, r.status, r.replacedBy])).toEqual([
      [t1 + 1000, 'success', undefined],
      [t0 + 1000, 'success', t1 + 1000],
    ]);
    // an event at or after a released run's due time is a new cycle, not a replacement
    const t2 = t1 + 1000;
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t2 });
    await until(async () => (await queue.getJob(`${id}@${t2 + 1000}`))?.state === 'success', 10_000);
    expect((await tasks.runs(id)).map((r) => r.replacedBy)).toEqual([undefined, undefined, t1 + 1000]);
  });

  it('removing the rule while its run is staged drops the run', async () => {
    const { tasks, ran, scheduler, stagedOf, sentinel } = setup();
    await tasks.rule({ id: 'wb', after: 'user.seen', delay: 'PT2S', task: 'winback' });
    const t0 = Date.now();
    const done = await sentinel(t0 + 2500);
    await scheduler();
    await tasks.emit({ event: 'user.seen', subject: 'u1', at: t0 });
    const id = pendingId('wb', 'u1');
    await until(async () => (await stagedOf(id)).length === 1, 5000);
    expect(await tasks.removeRule('wb')).toBe(true);
    expect(await stagedOf(id)).toEqual([]);
    await done();
    expect(ran.map((r) => r.task)).toEqual(['sentinel']);
  });
});

describe('changing a task while its occurrence is staged', () => {
  it('upsert with a new timer: the staged occurrence is dropped, the new one runs once', async () => {
    const { tasks, ran, scheduler, stagedOf, at, sentinel } = setup();
    const t0 = Date.now();
    await tasks.upsert({ id: 'job', task: 'report', timer: at(t0 + 2000) });
    const done = await sentinel(t0 + 3000);
    await scheduler();
    await until(async () => (await stagedOf('job')).length === 1, 5000);
    await tasks.upsert({ id: 'job', task: 'report', timer: at(t0 + 2500) });
    expect(await stagedOf('job')).not.toContain(`S${'job'}@${t0 + 2000}|l${'default'}`);
    await done();
    expect(ran.filter((r) => r.task === 'report').map((r) => r.occurrence)).toEqual([t0 + 2500]);
    expect((await tasks.runs('job')).map((r) => [r.occurrence, r.status])).toEqual([[t0 + 2500, 'success']]);
  });

  it('upsert with the same timer keeps the staged occurrence: it runs once', async () => {
    const { tasks, ran, scheduler, stagedOf, at, sentinel } = setup();
    const t0 = Date.now();
    await tasks.upsert({ id: 'job', task: 'report', timer: at(t0 + 2000) });
    const done = await sentinel(t0 + 2500);
    await scheduler();
    await until(async () => (await stagedOf('job')).length === 1, 5000);
    await tasks.upsert({ id: 'job', task: 'report', timer: at(t0 + 2000) });
    expect((await stagedOf('job')).length).toBe(1);
    await done();
    expect(ran.filter((r) => r.task === 'report').map((r) => r.occurrence)).toEqual([t0 + 2000]);
  });

  for (const change of ['disable', 'remove', 'removeByOwner'] as const) {
    it(`${change}: the staged occurrence never runs`, async () => {
      const { tasks, ran, scheduler, stagedOf, at, sentinel } = setup();
      const t0 = Date.now();
      await tasks.upsert({ id: 'job', task: 'report', timer: at(t0 + 2000), owner: 'team' });
      const done = await sentinel(t0 + 2500);
      await scheduler();
      await until(async () => (await stagedOf('job')).length === 1, 5000);
      if (change === 'disable') expect(await tasks.disable('job')).toBe(true);
      else if (change === 'remove') expect(await tasks.remove('job')).toBe(true);
      else expect(await tasks.removeByOwner('team')).toEqual(['job']);
      expect(await stagedOf('job')).toEqual([]);
      await done();
      expect(ran.map((r) => r.task)).toEqual(['sentinel']);
      if (change === 'disable') expect(await tasks.runs('job')).toEqual([]);
    });
  }

  it('trigger: a run now, and the staged occurrence still runs once', async () => {
    const { tasks, ran, scheduler, stagedOf, at } = setup();
    const t0 = Date.now();
    await tasks.upsert({ id: 'job', task: 'report', timer: at(t0 + 2500), overlap: 'allow' });
    await scheduler();
    await until(async () => (await stagedOf('job')).length === 1, 5000);
    const fired = (await tasks.trigger('job'))!;
    expect(fired.occurrence).toBeLessThan(t0 + 2500);
    await until(async () => ran.filter((r) => r.task === 'report').length === 2, 10_000);
    expect(ran.map((r) => r.occurrence)).toEqual([fired.occurrence, t0 + 2500]);
    expect((await tasks.runs('job')).map((r) => [r.occurrence, r.status])).toEqual([
      [t0 + 2500, 'success'],
      [fired.occurrence, 'success'],
    ]);
  });
});
