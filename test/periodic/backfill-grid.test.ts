/**
 * A backfill of an interval task walks the timer's own grid (anchor + k × interval), with or
 * without schedule controls: it submits exactly the occurrence ids the scheduler uses, so an
 * occurrence the scheduler already ran is found run, not run again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { closeAll, eventually, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const ms = (iso: string) => Date.parse(iso);
const H = 3_600_000;

describe('backfill of an interval task', () => {
  it.each([
    ['no schedule control', {}],
    ['an exclusion', { exclude: ['Sat'] }], // (2026-05-31 and 06-01 are Sunday and Monday: nothing excluded here)
  ])('with %s: submits the scheduler grid, finding the hours the scheduler ran', async (_, controls) => {
    const name = uniqueQueue('bfg');
    let now = ms('2026-06-01T00:00:10Z');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => now }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    const anchor = ms('2026-01-01T00:30:00Z');
    await tasks.upsert({
      id: 'i',
      task: 'i',
      timer: 'every 1h from 2026-01-01T00:30:00Z',
      overlap: 'allow',
      ...controls,
    });
    // the scheduler runs 00:30 to 03:30 (its occurrence ids: i@<anchor + k h>)
    const s = new Scheduler(name, { connection: redisUrl(), now: () => now, lookaheadMs: 1000, misfireGraceMs: 24 * H });
    await s.start();
    now = ms('2026-06-01T03:40:00Z');
    s.wake();
    const raw = rawClient();
    const k = queueKeys(name);
    await eventually(
      async () =>
        Number(await raw.hget(`${k.prefix}p:t:i`, 'nextrun')) > now &&
        (await raw.zcount(`${k.prefix}p:staged`, '-inf', now)) === 0,
    );
    await s.close();
    const ran = (await tasks.runs('i', { limit: 100 })).map((r) => r.jobId).sort();
    const hour = (h: string) => `i@${ms(`2026-06-01T${h}:30:00Z`)}`;
    expect(ran).toEqual(['00', '01', '02', '03'].map(hour).sort());
    // a backfill from 22:10 (off the grid) to 03:40: 22:30 and 23:30 are new, the others ran
    const r = await tasks.backfill('i', { from: ms('2026-05-31T22:10:00Z'), to: now, overlap: 'allow' });
    expect(r).toEqual({ occurrences: 6, submitted: 2, alreadyRan: 4 });
    const jobs = (await queue.jobs({ state: 'waiting', limit: 100 })).map((j) => j.id).sort();
    const grid = (t: number) => (t - anchor) % H === 0;
    expect(jobs.every((id) => grid(Number(id.slice(2))))).toBe(true);
    expect(jobs).toEqual(
      [`i@${ms('2026-05-31T22:30:00Z')}`, `i@${ms('2026-05-31T23:30:00Z')}`, ...['00', '01', '02', '03'].map(hour)].sort(),
    );
  });
});
