import { describe, expect, it } from 'vitest';
import { parseTimer } from '../../src/timers/index.js';

function chain(spec: string, timezone: string, from: string, n: number): (string | null)[] {
  const timer = parseTimer(spec, { timezone });
  const out: (string | null)[] = [];
  let at: Date | null = new Date(from);
  for (let i = 0; i < n && at; i++) {
    at = timer.next(at);
    out.push(at ? at.toISOString().replace('.000Z', 'Z') : null);
  }
  return out;
}

// Lord Howe: +11 → +10:30 at 2026-04-04T15:00Z (02:00 → 01:30), +10:30 → +11 at 2026-10-03T15:30Z (02:00 → 02:30).
// Santiago: -4 → -3 at 2026-09-06T04:00Z (00:00 → 01:00).
describe('cron rules across DST changes that are not a whole hour at 02:00', () => {
  it('an hourly rule goes on through a 30-minute fall-back (cron-parser stopped for good)', () => {
    expect(chain('0 * * * *', 'Australia/Lord_Howe', '2026-04-04T13:30:00Z', 4)).toEqual([
      '2026-04-04T14:00:00Z', // 01:00 +11
      '2026-04-04T15:30:00Z', // 02:00 +10:30 (01:30-02:00 repeats, 01:00 does not)
      '2026-04-04T16:30:00Z',
      '2026-04-04T17:30:00Z',
    ]);
  });

  it('an hourly rule follows the clock through a 30-minute spring-forward', () => {
    expect(chain('0 * * * *', 'Australia/Lord_Howe', '2026-10-03T13:30:00Z', 3)).toEqual([
      '2026-10-03T14:30:00Z', // 01:00 +10:30
      '2026-10-03T16:00:00Z', // 03:00 +11 (02:00 was skipped)
      '2026-10-03T17:00:00Z',
    ]);
  });

  it('stepped minutes run the repeated half hour again after a fall-back', () => {
    expect(chain('*/20 * * * *', 'Australia/Lord_Howe', '2026-04-04T14:00:00Z', 5)).toEqual([
      '2026-04-04T14:20:00Z', // 01:20 +11
      '2026-04-04T14:40:00Z', // 01:40 +11
      '2026-04-04T15:10:00Z', // 01:40 +10:30, again
      '2026-04-04T15:30:00Z', // 02:00 +10:30
      '2026-04-04T15:50:00Z',
    ]);
  });

  it('a fixed 02:00 job runs at 02:30 on the 30-minute spring-forward day (shifted by the gap)', () => {
    expect(chain('0 2 * * *', 'Australia/Lord_Howe', '2026-10-02T14:00:00Z', 3)).toEqual([
      '2026-10-02T15:30:00Z', // 02:00 +10:30
      '2026-10-03T15:30:00Z', // 02:30 +11
      '2026-10-04T15:00:00Z', // 02:00 +11
    ]);
  });

  it('a midnight job runs at 01:00 when midnight is skipped (Santiago)', () => {
    expect(chain('0 0 * * *', 'America/Santiago', '2026-09-05T03:00:00Z', 3)).toEqual([
      '2026-09-05T04:00:00Z', // 00:00 -4
      '2026-09-06T04:00:00Z', // 01:00 -3
      '2026-09-07T03:00:00Z', // 00:00 -3
    ]);
  });

  it('every next is strictly after its argument, every 5 minutes through each change', () => {
    for (const [zone, change] of [
      ['Australia/Lord_Howe', '2026-04-04T15:00:00Z'],
      ['Australia/Lord_Howe', '2026-10-03T15:30:00Z'],
      ['America/Santiago', '2026-09-06T04:00:00Z'],
      ['Antarctica/Troll', '2026-10-25T01:00:00Z'],
    ] as const) {
      for (const spec of ['0 * * * *', '*/20 * * * *', '*/45 * * * *', '30 2 * * *', '0 0 * * *']) {
        const timer = parseTimer(spec, { timezone: zone });
        for (let t = Date.parse(change) - 3 * 3_600_000; t <= Date.parse(change) + 3 * 3_600_000; t += 5 * 60_000) {
          const n = timer.next(new Date(t));
          expect(n?.getTime() ?? null, `${spec} ${zone} after ${new Date(t).toISOString()}`).toBeGreaterThan(t);
        }
      }
    }
  });
});
