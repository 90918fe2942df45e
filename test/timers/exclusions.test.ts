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
});
