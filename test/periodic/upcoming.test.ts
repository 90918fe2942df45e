/**
 * upcoming() (and so `rota periodic next` and the dashboard's next runs) with exclusions and
 * limits: excluded stretches are jumped over however many elapses they hold, and a task lists no
 * more runs than its limit leaves. The expected elapses come from the calendar code of an
 * equivalent spec without exclusions (test/helpers/calendar.ts, checked against systemd-analyze).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler } from '../../src/index.js';
import { nextRuns, scheduleTimer } from '../../src/periodic/schedule.js';
import { elapses } from '../helpers/calendar.js';
import { rota } from '../helpers/cli.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString().replace('.000Z', 'Z');

function setup(start: string) {
  const name = uniqueQueue('up');
  const clock = { now: ms(start) };
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => clock.now }));
  return { name, tasks, clock };
}

describe('upcoming', () => {
  it('a five-minute task excluding the weekend lists Friday evening, then Monday (as Mon..Fri *:0/5 would)', async () => {
    const start = '2026-12-04T23:31:00Z'; // a Friday
    const { name, tasks } = setup(start);
    await tasks.upsert({ id: 'w', task: 'w', timer: '*:0/5', exclude: ['Sat,Sun'] });
    const got = (await tasks.upcoming({ limit: 20 })).map((u) => iso(u.occurrence));
    expect(got).toEqual(elapses('Mon..Fri *:0/5', 'UTC', start, 20));
    expect(got.filter((t) => t.startsWith('2026-12-07'))).toHaveLength(15);
    // the CLI lists the same
    const r = await rota(['--redis', redisUrl(), '--queue', name, 'periodic', 'next', '--limit', '20', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.map((l) => iso((JSON.parse(l) as { occurrence: number }).occurrence))).toEqual(got);
  });

  it('a minutely task excluding Sunday morning lists Sunday noon onwards, from inside the window too', async () => {
    for (const start of ['2026-12-05T23:57:30Z', '2026-12-06T00:30:00Z']) {
      const { tasks } = setup(start);
      await tasks.upsert({ id: 'm', task: 'm', timer: 'minutely', exclude: ['Sun 00:00..12:00'] });
      const got = (await tasks.upcoming({ limit: 5 })).map((u) => iso(u.occurrence));
      const want = elapses('minutely', 'UTC', start, 24 * 60)
        .filter((t) => !(t.startsWith('2026-12-06') && t < '2026-12-06T12'))
        .slice(0, 5);
      expect(got, start).toEqual(want);
      expect(got.at(-1)! >= '2026-12-06T12:00:00Z').toBe(true);
    }
  });

  it('lists no more runs than the limit leaves: 3 of a task limited to 3, then 2 once one is released', async () => {
    const start = '2026-06-01T10:00:30Z';
    const { name, tasks, clock } = setup(start);
    await tasks.upsert({ id: 'l', task: 'l', timer: 'minutely', limit: 3 });
    expect((await tasks.upcoming({ limit: 10 })).map((u) => iso(u.occurrence))).toEqual(elapses('minutely', 'UTC', start, 3));
    // a scheduler on the same clock, moved past the first occurrence: it is staged and released
    let now = clock.now;
    const s = track(new Scheduler(name, { connection: redisUrl(), now: () => now, lookaheadMs: 1000 }));
    await s.start();
    now = clock.now = ms('2026-06-01T10:01:00.500Z');
    s.wake();
    await eventually(
      async () => (await tasks.get('l'))?.runs === 1 && (await tasks.runs('l')).some((r) => r.status === 'waiting'),
    );
    expect((await tasks.upcoming({ limit: 10 })).map((u) => iso(u.occurrence))).toEqual([
      '2026-06-01T10:02:00Z',
      '2026-06-01T10:03:00Z',
    ]);
  });
  it("nextRuns (the dashboard's next runs): jumps a weekend in one step, and stops at the runs a limit leaves", () => {
    const weekend = scheduleTimer({ timers: ['*:0/5'], exclude: ['Sat,Sun'] }, 'UTC');
    expect(nextRuns(weekend, ms('2026-12-05T00:00:00Z'), 2).map(iso)).toEqual(['2026-12-07T00:00:00Z', '2026-12-07T00:05:00Z']);
    const limited = scheduleTimer({ timers: ['minutely'], limit: 5 }, 'UTC');
    expect(nextRuns(limited, ms('2026-12-05T00:00:00Z'), 10, 3)).toHaveLength(2);
    expect(nextRuns(limited, ms('2026-12-05T00:00:00Z'), 10, 5)).toEqual([]);
    // a whole year excluded: found past it (the stretch followed day by day, in one walk)
    const year = scheduleTimer({ timers: ['daily'], exclude: ['2027-01-01..2027-12-31'] }, 'UTC');
    expect(nextRuns(year, ms('2026-12-31T00:00:00Z'), 2).map(iso)).toEqual(['2026-12-31T00:00:00Z', '2028-01-01T00:00:00Z']);
  });
});
