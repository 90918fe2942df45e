/**
 * Schedule controls (issue 43, first half): several timers, exclusions across DST changes,
 * startAt/endAt, limit, immediately, the `ended` state, and their validation. A real scheduler on
 * an injected clock: the task is planned at `from`, then the scheduler's clock is put at `to`;
 * with catch-up `all` over a long window every occurrence in between goes through planning, the
 * schedule controls, staging and release.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler, ValidationError } from '../../src/index.js';
import type { PeriodicTaskDefinition } from '../../src/periodic/definition.js';
import { jitterOffset } from '../../src/periodic/jitter.js';
import { parseEntry } from '../../src/queue/events.js';
import { queueKeys } from '../../src/redis/keys.js';
import { closeAll, eventually, rawClient, redisUrl, streamEvents, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();
const DAY = 86_400_000;

function setup(start: string) {
  const name = uniqueQueue('ctl');
  const clock = { now: ms(start) };
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => clock.now }));
  const queue = track(new Queue(name, { connection: redisUrl() }));
  return { name, tasks, queue, clock };
}

/**
 * Runs a scheduler whose clock goes from `from` to `to` in steps of at most 2 hours (so that a
 * planning walk stays short, far within its time budget); at each step it waits until every
 * task of `ids` is planned past the clock (or has ended) and nothing staged is due. Then closes it.
 */
async function runUntil(name: string, ids: string[], to: string, from = to): Promise<void> {
  let now = ms(from);
  const s = new Scheduler(name, {
    connection: redisUrl(),
    now: () => now,
    misfireGraceMs: DAY,
    lookaheadMs: 1000,
  });
  await s.start();
  const raw = rawClient();
  const k = queueKeys(name);
  try {
    for (;;) {
      s.wake();
      await eventually(async () => {
        for (const id of ids) {
          const [next, triggered] = await raw.hmget(`${k.prefix}p:t:${id}`, 'nextrun', 'triggered');
          if (triggered || (next && Number(next) <= now)) return false;
        }
        return (await raw.zcount(`${k.prefix}p:staged`, '-inf', now)) === 0;
      });
      if (now >= ms(to)) break;
      now = Math.min(ms(to), now + 2 * 3_600_000);
    }
  } finally {
    await s.close();
  }
}

/** A task's history as `ISO occurrence -> status`, oldest first. */
async function history(tasks: PeriodicTasks, id: string): Promise<Array<[string, string]>> {
  const runs = await tasks.runs(id, { limit: 1000 });
  return runs.reverse().map((r) => [iso(r.occurrence), r.status]);
}

// (catch-up `all` over a month: spans longer than the misfire grace are still walked whole)
const base = { task: 'noop', overlap: 'allow', catchup: 'all', catchupWindow: 30 * DAY } as const;

describe('exclusions, read in the task zone across DST changes', () => {
  const cases: Array<{
    title: string;
    start: string;
    to: string;
    def: Partial<PeriodicTaskDefinition>;
    excluded: string[];
    ran: string[];
  }> = [
    {
      title: 'Europe/Paris, spring forward (2026-03-29 02:00 CET -> 03:00 CEST): Sun 01:00..04:00 is two real hours',
      start: '2026-03-28T23:30:00Z',
      to: '2026-03-29T03:30:00Z',
      def: { timer: '*-*-* *:00', timezone: 'Europe/Paris', exclude: ['Sun 01:00..04:00'] },
      // 01:00 CET and 03:00 CEST; 04:00 CEST runs
      excluded: ['2026-03-29T00:00:00.000Z', '2026-03-29T01:00:00.000Z'],
      ran: ['2026-03-29T02:00:00.000Z', '2026-03-29T03:00:00.000Z'],
    },
    {
      title: 'Europe/Paris, fall back (2026-10-25 03:00 CEST -> 02:00 CET): Sun 02:00..03:00 covers the hour twice',
      start: '2026-10-24T22:30:00Z',
      to: '2026-10-25T03:30:00Z',
      // (an hourly interval meets the repeated wall-clock hour twice; a calendar event once, as systemd's)
      def: { timer: 'every 1h', timezone: 'Europe/Paris', exclude: ['Sun 02:00..03:00'] },
      excluded: ['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z'],
      ran: ['2026-10-24T23:00:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z'],
    },
    {
      title: 'Australia/Sydney, fall back (2026-04-05 03:00 AEDT -> 02:00 AEST): Sun 02:00..03:00 twice',
      start: '2026-04-04T13:30:00Z',
      to: '2026-04-04T18:30:00Z',
      def: { timer: 'every 1h', timezone: 'Australia/Sydney', exclude: ['Sun 02:00..03:00'] },
      excluded: ['2026-04-04T15:00:00.000Z', '2026-04-04T16:00:00.000Z'],
      ran: ['2026-04-04T14:00:00.000Z', '2026-04-04T17:00:00.000Z', '2026-04-04T18:00:00.000Z'],
    },
    {
      title: 'Australia/Sydney, spring forward (2026-10-04 02:00 AEST -> 03:00 AEDT): the whole day *-10-04 is 23 hours',
      start: '2026-10-03T12:30:00Z',
      to: '2026-10-04T14:30:00Z',
      def: { timer: '*-*-* *:00', timezone: 'Australia/Sydney', exclude: ['*-10-04'] },
      // local 2026-10-04 00:00 AEST (14:00Z) to 23:00 AEDT (12:00Z): 23 occurrences
      excluded: Array.from({ length: 23 }, (_, i) => iso(ms('2026-10-03T14:00:00Z') + i * 3_600_000)),
      ran: ['2026-10-03T13:00:00.000Z', '2026-10-04T13:00:00.000Z', '2026-10-04T14:00:00.000Z'],
    },
    {
      title: 'Europe/Paris, whole days: a date range and a yearly holiday',
      start: '2026-12-21T12:00:00Z',
      to: '2026-12-28T12:00:00Z',
      def: { timer: '*-*-* 09:00', timezone: 'Europe/Paris', exclude: ['2026-12-24..2026-12-25', '*-12-25', '*-12-26'] },
      excluded: ['2026-12-24T08:00:00.000Z', '2026-12-25T08:00:00.000Z', '2026-12-26T08:00:00.000Z'],
      ran: ['2026-12-22T08:00:00.000Z', '2026-12-23T08:00:00.000Z', '2026-12-27T08:00:00.000Z', '2026-12-28T08:00:00.000Z'],
    },
  ];
  for (const c of cases) {
    it(c.title, async () => {
      const { name, tasks, queue } = setup(c.start);
      const t = await tasks.upsert({ id: 'x', ...base, ...c.def } as PeriodicTaskDefinition);
      expect(t.exclude).toEqual(c.def.exclude);
      // the look-ahead lists no excluded occurrence
      const upcoming = await tasks.upcoming({ limit: 100, until: ms(c.to) });
      expect(upcoming.map((u) => iso(u.occurrence))).toEqual(c.ran);
      await runUntil(name, ['x'], c.to, c.start);
      const h = await history(tasks, 'x');
      expect(h.filter(([, s]) => s === 'excluded').map(([o]) => o)).toEqual(c.excluded);
      expect(h.filter(([, s]) => s !== 'excluded').map(([o]) => o)).toEqual(c.ran);
      for (const o of c.ran) expect((await queue.getJob(`x@${ms(o)}`))?.state).toBe('waiting');
      for (const o of c.excluded) expect(await queue.getJob(`x@${ms(o)}`)).toBeNull();
    });
  }
});

describe('bounds: startAt, endAt, limit, immediately, and the ended state', () => {
  it('startAt and endAt: no occurrence before or after; past the end the task is ended, listed as such, kept with its history, removable', async () => {
    const { name, tasks } = setup('2026-06-01T00:30:00Z');
    const t = await tasks.upsert({
      id: 'b',
      ...base,
      timer: '*:00',
      startAt: new Date('2026-06-01T02:00:00Z'),
      endAt: ms('2026-06-01T05:00:00Z'),
    });
    expect(t.nextrun).toBe(ms('2026-06-01T02:00:00Z'));
    expect(t).toMatchObject({ startAt: ms('2026-06-01T02:00:00Z'), endAt: ms('2026-06-01T05:00:00Z'), ended: false });
    await runUntil(name, ['b'], '2026-06-01T10:30:00Z', '2026-06-01T00:30:00Z');
    expect(await history(tasks, 'b')).toEqual(
      ['02', '03', '04', '05'].map((h) => [`2026-06-01T${h}:00:00.000Z`, 'waiting'] as [string, string]),
    );
    const ended = (await tasks.get('b'))!;
    expect(ended).toMatchObject({ enabled: true, ended: true });
    expect(ended.nextrun).toBeUndefined();
    expect((await tasks.list()).map((x) => [x.id, x.ended])).toEqual([['b', true]]);
    // one periodic.ended event
    const ends = (await streamEvents(name)).filter((e) => e.event === 'periodic.ended');
    expect(ends.map((e) => [e.id, e.periodic])).toEqual([['b', { task: 'b' }]]);
    expect(await tasks.upcoming()).toEqual([]);
    expect(await tasks.remove('b')).toBe(true);
    expect(await tasks.get('b')).toBeNull();
  });

  it('limit: at most N scheduled runs, triggers not counted; then ended (and a trigger still runs)', async () => {
    const { name, tasks, queue, clock } = setup('2026-06-01T00:30:00Z');
    await tasks.upsert({ id: 'l', ...base, timer: '*:00', limit: 3 });
    clock.now = ms('2026-06-01T00:40:00Z');
    const trig = await tasks.trigger('l');
    await runUntil(name, ['l'], '2026-06-01T00:45:00Z');
    await runUntil(name, ['l'], '2026-06-01T10:30:00Z', '2026-06-01T00:45:00Z');
    expect(await history(tasks, 'l')).toEqual([
      ['2026-06-01T00:40:00.000Z', 'waiting'],
      ['2026-06-01T01:00:00.000Z', 'waiting'],
      ['2026-06-01T02:00:00.000Z', 'waiting'],
      ['2026-06-01T03:00:00.000Z', 'waiting'],
    ]);
    expect((await queue.getJob(trig!.jobId))?.state).toBe('waiting');
    expect(await tasks.get('l')).toMatchObject({ limit: 3, runs: 3, ended: true });
    expect((await streamEvents(name)).filter((e) => e.event === 'periodic.ended').map((e) => e.id)).toEqual(['l']);
    // an ended task may still be triggered by hand; it stays ended
    clock.now = ms('2026-06-01T11:00:00Z');
    const again = await tasks.trigger('l');
    await runUntil(name, ['l'], '2026-06-01T11:00:00Z');
    expect((await queue.getJob(again!.jobId))?.state).toBe('waiting');
    expect(await tasks.get('l')).toMatchObject({ runs: 3, ended: true });
    // raising the limit resumes it from now
    const raised = await tasks.upsert({ id: 'l', ...base, timer: '*:00', limit: 4 });
    expect(raised).toMatchObject({ ended: false, nextrun: ms('2026-06-01T12:00:00Z') });
  });

  it('immediately: one run when the task is created (not counted by limit, not repeated by a re-upsert)', async () => {
    const { name, tasks, queue } = setup('2026-06-01T00:30:00Z');
    const def = { id: 'i', ...base, timer: '*:00', immediately: true, limit: 1 };
    expect(await tasks.upsert(def)).toMatchObject({ immediately: true });
    await runUntil(name, ['i'], '2026-06-01T00:30:00Z');
    expect((await queue.getJob(`i@${ms('2026-06-01T00:30:00Z')}`))?.state).toBe('waiting');
    await tasks.upsert(def);
    await runUntil(name, ['i'], '2026-06-01T03:30:00Z', '2026-06-01T00:30:00Z');
    expect(await history(tasks, 'i')).toEqual([
      ['2026-06-01T00:30:00.000Z', 'waiting'],
      ['2026-06-01T01:00:00.000Z', 'waiting'],
    ]);
    expect((await tasks.get('i'))!.ended).toBe(true);
  });
});

describe('jitter', () => {
  it('a jittered occurrence is released at its due time and is late by that, not by its occurrence', async () => {
    const { name, tasks, queue } = setup('2026-06-01T00:30:00Z');
    const occ = ms('2026-06-01T01:00:00Z');
    const JITTER = 600_000;
    // a task id whose offset is well past the misfire grace (15 s)
    const id = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'].find((k) => jitterOffset(k, occ, JITTER) > 60_000)!;
    const due = occ + jitterOffset(id, occ, JITTER);
    // catch-up `none`: an occurrence found late is dropped as missed
    await tasks.upsert({ id, task: 'noop', timer: '*:00', jitter: JITTER, catchup: 'none' });
    const opts = { connection: redisUrl(), lookaheadMs: 2500 };
    const stager = new Scheduler(name, { ...opts, now: () => occ - 1500 });
    await stager.start();
    const raw = rawClient();
    const staged = `${queueKeys(name).prefix}p:staged`;
    await eventually(async () => (await raw.zcard(staged)) === 1);
    expect(Number((await raw.zrange(staged, 0, 0, 'WITHSCORES'))[1])).toBe(due);
    await stager.close();
    expect((await queue.getJob(`${id}@${occ}`))?.state).toBeUndefined();
    // another replica, at the due time: the run goes (its occurrence is minutes old)
    const releaser = track(new Scheduler(name, { ...opts, now: () => due }));
    await releaser.start();
    await eventually(async () => (await queue.getJob(`${id}@${occ}`))?.state === 'waiting');
    const [run] = await tasks.runs(id);
    expect(run).toMatchObject({ occurrence: occ, due, status: 'waiting' });
  });
});

describe('several timers', () => {
  it('runs at the union of their occurrences, an instant two share once', async () => {
    const { name, tasks, queue } = setup('2026-06-01T00:00:00Z');
    const t = await tasks.upsert({ id: 'u', ...base, timer: ['*-*-* 09:00', '*-*-* 09,12:00', 'Tue 07:30'] });
    expect(t.timer).toEqual(['*-*-* 09:00', '*-*-* 09,12:00', 'Tue 07:30']);
    await runUntil(name, ['u'], '2026-06-02T23:00:00Z', '2026-06-01T00:00:00Z');
    expect(await history(tasks, 'u')).toEqual([
      ['2026-06-01T09:00:00.000Z', 'waiting'],
      ['2026-06-01T12:00:00.000Z', 'waiting'],
      ['2026-06-02T07:30:00.000Z', 'waiting'],
      ['2026-06-02T09:00:00.000Z', 'waiting'],
      ['2026-06-02T12:00:00.000Z', 'waiting'],
    ]);
    // each submitted once: one `waiting` event per job
    const adds = new Map<string, number>();
    for (const [sid, fields] of await rawClient().xrange(queue.keys.events, '-', '+')) {
      for (const e of parseEntry(sid, fields)) if (e.state === 'waiting') adds.set(e.id, (adds.get(e.id) ?? 0) + 1);
    }
    expect([...adds.values()]).toEqual([1, 1, 1, 1, 1]);
  });
});

describe('validation', () => {
  const bad: Array<[string, Record<string, unknown>]> = [
    ['timer', { timer: [] }],
    ['timer', { timer: 42 }],
    ['timer[1]', { timer: ['*:00', 'not a timer'] }],
    ['timer[0]', { timer: ['every 10ms'] }],
    ['timer', { timer: ['*:*:00', '*:*:00.5'] }],
    ['exclude', { exclude: ['Sun 25:00..26:00'] }],
    ['exclude', { exclude: ['*-12-25 10:00'] }],
    ['exclude', { exclude: ['2026-12-26..2026-12-24'] }],
    ['exclude', { exclude: ['Sun 02:00..02:00'] }],
    ['exclude', { exclude: 'Sun' }],
    ['startAt', { startAt: 'tomorrow' }],
    ['startAt', { startAt: -1 }],
    ['endAt', { endAt: new Date('nope') }],
    ['endAt', { startAt: 2000, endAt: 1000 }],
    ['limit', { limit: 0 }],
    ['limit', { limit: 1.5 }],
    ['jitter', { jitter: -1 }],
    ['jitter', { jitter: 8 * DAY }],
    ['immediately', { immediately: 'yes' }],
  ];
  it('a typed ValidationError naming the field, and nothing written', async () => {
    const { name, tasks } = setup('2026-06-01T00:00:00Z');
    for (const [field, extra] of bad) {
      const err = await tasks.upsert({ id: 'v', ...base, timer: '*:00', ...extra } as never).catch((e: unknown) => e);
      expect(err, JSON.stringify(extra)).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, JSON.stringify(extra)).toBe(field);
    }
    expect(await tasks.get('v')).toBeNull();
    expect(await rawClient().keys(`{rota:${name}}:p:*`)).toEqual([]);
  });
});
