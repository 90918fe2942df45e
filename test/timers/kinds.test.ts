import { describe, expect, it } from 'vitest';
import { RotaError } from '../../src/errors.js';
import { detectTimerKind, parseTimer, TimerSyntaxError } from '../../src/timers/index.js';

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

function chain(spec: string, from: string, n: number, timezone?: string): string[] {
  const t = parseTimer(spec, { timezone });
  const out: string[] = [];
  let at: Date | null = new Date(from);
  for (let i = 0; i < n && at; i++) {
    at = t.next(at);
    if (at) out.push(at.toISOString());
  }
  return out;
}

describe('parseTimer decides the kind from the shape of the spec', () => {
  it.each([
    ['every 30s', 'interval'],
    ['every 2h30m', 'interval'],
    ['PT15M', 'interval'],
    ['P1D', 'interval'],
    ['R/2026-01-01T00:30:00Z/PT1H', 'interval'],
    ['@daily', 'cron'],
    ['@hourly', 'cron'],
    ['0 12 * * *', 'cron'],
    ['*/10 * * * * *', 'cron'],
    ['2026-04-01T10:00:00Z', 'once'],
    ['@1700000000', 'calendar'],
    ['daily', 'calendar'],
    ['Mon..Fri 09:00', 'calendar'],
    ['*-*-* 02:30 Europe/Paris', 'calendar'],
    ['2026-04-01 10:00', 'calendar'],
  ])('%s → %s', (spec, kind) => {
    expect(detectTimerKind(spec)).toBe(kind);
    expect(parseTimer(spec).kind).toBe(kind);
  });
});

describe('intervals', () => {
  it('are anchored at the Unix epoch by default, so replicas agree', () => {
    const t = parseTimer('every 30s');
    expect(t.intervalMs).toBe(30_000);
    expect(iso(t.next(new Date('2026-03-28T12:00:10.123Z')))).toBe('2026-03-28T12:00:30.000Z');
    expect(iso(t.next(new Date('2026-03-28T12:00:30.000Z')))).toBe('2026-03-28T12:01:00.000Z');
    expect(parseTimer('every 7m').next(new Date(0))!.getTime()).toBe(7 * 60_000);
  });

  it('accept compound units, long unit names and ISO-8601 durations', () => {
    expect(parseTimer('every 2h30m').intervalMs).toBe(9_000_000);
    expect(parseTimer('every 2h 30m').normalized).toBe('every 2h30m');
    expect(parseTimer('every 90 seconds').normalized).toBe('every 1m30s');
    expect(parseTimer('PT15M').intervalMs).toBe(900_000);
    expect(parseTimer('P1D').normalized).toBe('every 1d');
    expect(parseTimer('P1DT12H').intervalMs).toBe(36 * 3_600_000);
    expect(parseTimer('every PT0.5S').intervalMs).toBe(500);
  });

  it('take an explicit anchor: "from <date-time>" or an ISO repeating interval', () => {
    expect(chain('every 1h from 2026-01-01T00:30:00Z', '2026-03-28T12:00:00Z', 2)).toEqual([
      '2026-03-28T12:30:00.000Z',
      '2026-03-28T13:30:00.000Z',
    ]);
    expect(chain('every 1h from 2026-01-01T00:30:00Z', '2025-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T00:30:00.000Z']);
    const r = parseTimer('R/2026-01-01T00:30:00Z/PT1H');
    expect(r.normalized).toBe('every 1h from 2026-01-01T00:30:00.000Z');
    expect(chain('R3/2026-03-28T11:00:00Z/PT1H', '2026-03-28T00:00:00Z', 5)).toEqual([
      '2026-03-28T11:00:00.000Z',
      '2026-03-28T12:00:00.000Z',
      '2026-03-28T13:00:00.000Z',
    ]);
  });

  it('read an anchor without offset in the timezone option', () => {
    const t = parseTimer('every 1d from 2026-01-01T09:00', { timezone: 'Europe/Paris' });
    expect(t.normalized).toBe('every 1d from 2026-01-01T08:00:00.000Z');
    expect(t.timezone).toBe('Europe/Paris');
  });

  it.each([
    'every',
    'every 0s',
    'every 5 parsecs',
    'every 10',
    'P1M',
    'P1Y',
    'PT',
    'R/2026-01-01T00:00:00Z',
    'R0/2026-01-01T00:00:00Z/PT1H',
    'every 1h from yesterday',
  ])('rejects %j', (spec) => {
    expect(() => parseTimer(spec)).toThrow(TimerSyntaxError);
  });
});

describe('one-shot due dates', () => {
  it('elapse once', () => {
    const t = parseTimer('2026-04-01T10:00:00+02:00');
    expect(t.normalized).toBe('2026-04-01T08:00:00.000Z');
    expect(iso(t.next(new Date('2026-03-01T00:00:00Z')))).toBe('2026-04-01T08:00:00.000Z');
    expect(t.next(new Date('2026-04-01T08:00:00Z'))).toBeNull();
  });

  it('read a wall time in the timezone option (first of two, forward out of a gap)', () => {
    expect(parseTimer('2026-10-25T02:30', { timezone: 'Europe/Paris' }).normalized).toBe('2026-10-25T00:30:00.000Z');
    expect(parseTimer('2026-03-29T02:30', { timezone: 'Europe/Paris' }).normalized).toBe('2026-03-29T01:30:00.000Z');
    expect(parseTimer('2026-07-01T12:00', { timezone: 'America/New_York' }).normalized).toBe('2026-07-01T16:00:00.000Z');
  });

  it.each(['2026-02-30T00:00:00Z', '2026-13-01T00:00Z', '2026-01-01T24:00Z', '2026-01-01Tnoon'])('rejects %j', (spec) => {
    expect(() => parseTimer(spec)).toThrow(TimerSyntaxError);
  });
});

describe('cron rules', () => {
  it('support 5 and 6 fields and macros, with a normalized form', () => {
    expect(parseTimer('0 12 * * *').normalized).toBe('0 12 * * *');
    expect(parseTimer('*/15 * * * * *').normalized).toBe('*/15 * * * * *');
    expect(parseTimer('@daily').normalized).toBe('0 0 * * *');
    expect(chain('*/15 * * * * *', '2026-03-28T12:00:00Z', 2)).toEqual(['2026-03-28T12:00:15.000Z', '2026-03-28T12:00:30.000Z']);
  });

  it('are read in the timezone option', () => {
    expect(chain('0 9 * * 1-5', '2026-03-28T12:00:00Z', 1, 'Europe/Paris')).toEqual(['2026-03-30T07:00:00.000Z']);
  });

  it('run a 02:30 job once, at 03:30, on a spring-forward day (the wall time does not exist)', () => {
    expect(chain('30 2 * * *', '2026-03-27T12:00:00Z', 3, 'Europe/Paris')).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 03:30 CEST: 02:30 was skipped by the clock change
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
    ]);
    expect(chain('30 2 * * *', '2026-03-07T12:00:00Z', 2, 'America/New_York')).toEqual([
      '2026-03-08T07:30:00.000Z', // 03:30 EDT
      '2026-03-09T06:30:00.000Z',
    ]);
  });

  it('run a 01:30 job once, at the first occurrence, on a fall-back day (the wall time occurs twice)', () => {
    expect(chain('30 1 * * *', '2026-10-31T12:00:00Z', 2, 'America/New_York')).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:30 EST (06:30Z) does not run
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('follow real time through an overlap for stepped minutes', () => {
    expect(chain('*/30 * * * *', '2026-10-25T00:00:00Z', 4, 'Europe/Paris')).toEqual([
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
  });

  it.each([
    ['61 * * * *', 'cron minute field', 0],
    ['0 12 * * 8', 'cron day of week field', 9],
    ['0 0 30 2 *', 'cron day of month field', 4],
    ['@fortnightly', 'cron macro', 0],
    ['1 2 3 4 5 6 7', 'cron rule', 0],
  ])('rejects %j with a RotaError naming the %s', (spec, part, position) => {
    try {
      parseTimer(spec);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(TimerSyntaxError);
      expect(err).toBeInstanceOf(RotaError);
      expect((err as Error).name).toBe('TimerSyntaxError');
      expect((err as TimerSyntaxError).part).toBe(part);
      expect((err as TimerSyntaxError).position).toBe(position);
    }
  });
});

describe('calendar events through parseTimer', () => {
  it('expose the time zone and systemd normalized form', () => {
    const t = parseTimer('Mon..Fri 09:00', { timezone: 'Europe/Paris' });
    expect(t.normalized).toBe('Mon..Fri *-*-* 09:00:00');
    expect(t.timezone).toBe('Europe/Paris');
    expect(parseTimer('daily Asia/Kolkata').timezone).toBe('Asia/Kolkata');
    expect(parseTimer('daily').timezone).toBeUndefined();
  });

  it('skip a wall time that a DST gap removes and run once in an overlap, like systemd', () => {
    expect(chain('*-*-* 02:30', '2026-03-28T12:00:00Z', 2, 'Europe/Paris')).toEqual([
      '2026-03-30T00:30:00.000Z', // no run on 2026-03-29
      '2026-03-31T00:30:00.000Z',
    ]);
    expect(chain('*-*-* 02:30', '2026-10-24T12:00:00Z', 2, 'Europe/Paris')).toEqual([
      '2026-10-25T00:30:00.000Z', // first 02:30 (CEST) only
      '2026-10-26T01:30:00.000Z',
    ]);
  });

  it('report the offending part and its position', () => {
    try {
      parseTimer('Mon..Fri *-*-* 25:00');
      expect.unreachable();
    } catch (err) {
      const e = err as TimerSyntaxError;
      expect(e).toBeInstanceOf(TimerSyntaxError);
      expect(e.part).toBe('hour');
      expect(e.position).toBe(15);
      expect(e.message).toContain('hour at position 15');
    }
  });

  it('return null once a year range runs out', () => {
    expect(parseTimer('2030..2032-01-01').next(new Date('2032-06-01T00:00:00Z'))).toBeNull();
    expect(parseTimer('*-02-30').next(new Date('2026-01-01T00:00:00Z'))).toBeNull();
  });

  it('rejects an unknown timezone option', () => {
    expect(() => parseTimer('daily', { timezone: 'Mars/Olympus' })).toThrow(TimerSyntaxError);
  });
});
