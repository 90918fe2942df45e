/** Exclusions (src/timers/exclusions.ts): whole days, date ranges and wall-clock windows in a zone. */
import { describe, expect, it } from 'vitest';
import { parseExclusions, TimerSyntaxError } from '../../src/timers/index.js';

const at = (iso: string) => Date.parse(iso);

describe('exclusions', () => {
  it('whole days: a calendar date part, a date range (both ends included), weekdays', () => {
    const e = parseExclusions(['*-12-25', '2026-12-30..2027-01-01', 'Sat,Sun *-*-1..7'], 'Europe/Paris');
    expect(e.excludes(at('2026-12-24T23:00:00Z'))).toBe(true); // 00:00 on the 25th in Paris
    expect(e.excludes(at('2026-12-24T22:59:59Z'))).toBe(false);
    expect(e.excludes(at('2026-12-30T00:00:00+01:00'))).toBe(true);
    expect(e.excludes(at('2027-01-01T23:59:00+01:00'))).toBe(true);
    expect(e.excludes(at('2026-12-29T23:59:59+01:00'))).toBe(false);
    expect(e.excludes(at('2026-06-06T12:00:00+02:00'))).toBe(true); // Saturday the 6th
    expect(e.excludes(at('2026-06-13T12:00:00+02:00'))).toBe(false); // Saturday the 13th
  });

  it('windows: start included, end excluded; past midnight; 24:00; every day', () => {
    const e = parseExclusions(['Sun 02:00..04:00', 'Fri 22:30..01:00', 'Mon 23:00..24:00', '12:00..12:05'], 'UTC');
    expect(e.excludes(at('2026-06-07T02:00:00Z'))).toBe(true); // Sunday
    expect(e.excludes(at('2026-06-07T03:59:59Z'))).toBe(true);
    expect(e.excludes(at('2026-06-07T04:00:00Z'))).toBe(false);
    expect(e.excludes(at('2026-06-06T02:30:00Z'))).toBe(false); // Saturday
    expect(e.excludes(at('2026-06-05T23:00:00Z'))).toBe(true); // Friday evening
    expect(e.excludes(at('2026-06-06T00:30:00Z'))).toBe(true); // the small hours after it
    expect(e.excludes(at('2026-06-06T01:00:00Z'))).toBe(false);
    expect(e.excludes(at('2026-06-07T00:30:00Z'))).toBe(false); // after Saturday: no
    expect(e.excludes(at('2026-06-08T23:59:59Z'))).toBe(true); // Monday up to midnight
    expect(e.excludes(at('2026-06-09T12:04:00Z'))).toBe(true);
    expect(e.excludes(at('2026-06-09T12:05:00Z'))).toBe(false);
  });

  it('windows keep their wall-clock hours across DST changes (Australia/Sydney)', () => {
    const e = parseExclusions(['Sun 02:00..03:00'], 'Australia/Sydney');
    // 2026-04-05: 03:00 AEDT -> 02:00 AEST, so 02:00..03:00 happens twice
    expect(e.excludes(at('2026-04-04T15:30:00Z'))).toBe(true); // 02:30 AEDT
    expect(e.excludes(at('2026-04-04T16:30:00Z'))).toBe(true); // 02:30 AEST
    expect(e.excludes(at('2026-04-04T17:00:00Z'))).toBe(false); // 03:00 AEST
  });

  it('refuses what it cannot read', () => {
    for (const bad of [
      '',
      'Sun 25:00..26:00',
      'Sun 02:60..03:00',
      'Sun 02:00..02:00',
      '*-12-25 10:00',
      '*-12-25 UTC',
      '*-02~01',
      '2026-02-30..2026-03-01',
      '2026-03-02..2026-03-01',
      'someday',
    ]) {
      expect(() => parseExclusions([bad]), bad).toThrow(TimerSyntaxError);
    }
  });
  it('excludedUntil: the end of the excluded stretch an instant falls in (touching windows are one stretch), checked minute by minute', () => {
    const cases: Array<[string[], string]> = [
      [['Sat,Sun'], 'UTC'],
      [['Sun 00:00..12:00', 'Sat 22:00..02:00'], 'UTC'],
      [['2026-12-24..2026-12-26', '*-12-27 00:00..09:00'], 'Europe/Paris'],
      [['Sun 02:00..03:00', '*-10-04'], 'Australia/Sydney'],
      [['Sun'], 'America/Havana'], // DST changes at midnight
    ];
    const probes = [
      '2026-12-05T10:00:00Z',
      '2026-12-06T01:30:00Z',
      '2026-12-24T12:00:00Z',
      '2026-04-04T15:30:00Z',
      '2026-10-03T15:00:00Z',
      '2026-03-08T04:59:59Z',
      '2026-11-01T12:00:00Z',
    ];
    for (const [specs, zone] of cases) {
      const e = parseExclusions(specs, zone);
      for (const p of probes) {
        const t = at(p);
        const end = e.excludedUntil(t);
        if (!e.excludes(t)) {
          expect(end, `${specs} ${p}`).toBe(t);
          continue;
        }
        // each minute up to the end is excluded, and its last second; the end is not (unless the
        // end was not certain: then t)
        for (let s = t; s < end; s += 60_000) expect(e.excludes(s), `${specs} ${p} ${new Date(s).toISOString()}`).toBe(true);
        if (end > t) {
          expect(e.excludes(end - 1000), `${specs} ${p} before the end`).toBe(true);
          expect(e.excludes(end), `${specs} ${p} end`).toBe(false);
        }
      }
    }
    // a weekend is one stretch: Saturday 10:00 to Monday 00:00
    expect(new Date(parseExclusions(['Sat,Sun'], 'UTC').excludedUntil(at('2026-12-05T10:00:00Z'))).toISOString()).toBe(
      '2026-12-07T00:00:00.000Z',
    );
  });
});
