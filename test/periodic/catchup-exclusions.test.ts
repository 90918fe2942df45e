/**
 * Catch-up `latest` and exclusions: after an outage that ends inside an exclusion, the newest
 * missed occurrence that is not excluded runs (the newest, excluded, is recorded as such).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PeriodicTasks, Queue, Scheduler } from '../../src/index.js';
import { plan } from '../../src/periodic/occurrences.js';
import { excludesOf, scheduleTimer } from '../../src/periodic/schedule.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();

describe("catchup: 'latest' with exclusions", () => {
  it('plans the newest due occurrence that is not excluded, and the newest (excluded) one', () => {
    const timer = scheduleTimer({ timers: ['*:00'], exclude: ['Sat,Sun'] }, 'UTC');
    const input = {
      timer,
      catchup: 'latest' as const,
      catchupWindow: 3_600_000,
      misfireGraceMs: 15_000,
      excludes: excludesOf(timer),
    };
    // down from Friday 20:30 to Saturday 10:30: Friday 23:00 runs
    const p = plan({ ...input, nextrun: ms('2026-12-04T21:00:00Z'), now: ms('2026-12-05T10:30:00Z') });
    expect(p.occurrences.map(iso)).toEqual(['2026-12-04T23:00:00.000Z', '2026-12-05T10:00:00.000Z']);
    expect(p.missed).toEqual({ count: 12, first: ms('2026-12-04T21:00:00Z'), last: ms('2026-12-05T09:00:00Z') });
    // an outage that saw only excluded occurrences: the newest, as before
    const q = plan({ ...input, nextrun: ms('2026-12-05T01:00:00Z'), now: ms('2026-12-05T10:30:00Z') });
    expect(q.occurrences.map(iso)).toEqual(['2026-12-05T10:00:00.000Z']);
    // none excluded: the newest, as before
    const r = plan({ ...input, nextrun: ms('2026-12-03T01:00:00Z'), now: ms('2026-12-03T10:30:00Z') });
    expect(r.occurrences.map(iso)).toEqual(['2026-12-03T10:00:00.000Z']);
  });

  it('plans a short outage the same on a slow machine: the walk time budget applies past MIN_WALK occurrences only', () => {
    const timer = scheduleTimer({ timers: ['*:00'], exclude: ['Sat,Sun'] }, 'UTC');
    // every reading of the clock is 50 ms after the one before: each occurrence "takes" longer than the budget
    let t = 0;
    const slow = vi.spyOn(performance, 'now').mockImplementation(() => (t += 50));
    try {
      const p = plan({
        timer,
        catchup: 'latest',
        catchupWindow: 3_600_000,
        misfireGraceMs: 15_000,
        excludes: excludesOf(timer),
        nextrun: ms('2026-12-04T21:00:00Z'),
        now: ms('2026-12-05T10:30:00Z'),
      });
      expect(p.occurrences.map(iso)).toEqual(['2026-12-04T23:00:00.000Z', '2026-12-05T10:00:00.000Z']);
      expect(p.missed).toEqual({ count: 12, first: ms('2026-12-04T21:00:00Z'), last: ms('2026-12-05T09:00:00Z') });
    } finally {
      slow.mockRestore();
    }
  });

  it('a scheduler back on Saturday runs Friday 23:00 of a task excluding the weekend, and records Saturday 10:00 as excluded', async () => {
    const name = uniqueQueue('cux');
    let now = ms('2026-12-04T20:30:00Z'); // a Friday
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => now }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    await tasks.upsert({ id: 'h', task: 'h', timer: '*:00', exclude: ['Sat,Sun'], catchup: 'latest', overlap: 'allow' });
    // no scheduler until Saturday 10:30
    now = ms('2026-12-05T10:30:00Z');
    const s = track(new Scheduler(name, { connection: redisUrl(), now: () => now, lookaheadMs: 1000 }));
    await s.start();
    const friday = ms('2026-12-04T23:00:00Z');
    await eventually(async () => (await queue.getJob(`h@${friday}`))?.state === 'waiting');
    const runs = await tasks.runs('h', { limit: 100 });
    expect(runs.filter((r) => r.status === 'excluded').map((r) => iso(r.occurrence))).toEqual(['2026-12-05T10:00:00.000Z']);
    expect(runs.filter((r) => r.jobId).map((r) => r.jobId)).toEqual([`h@${friday}`]);
  });
});
