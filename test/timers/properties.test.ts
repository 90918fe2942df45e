import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTimer, type Timer, TimerSyntaxError } from '../../src/timers/index.js';

const ZONES = ['UTC', 'Europe/Paris', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'];

const pick = <T>(xs: readonly T[]) => fc.constantFrom(...xs);
const num = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map(String);
const pad2 = (lo: number, hi: number) => fc.integer({ min: lo, max: hi }).map((n) => String(n).padStart(2, '0'));

/** Values of one calendar field: *, a value, a list, a range, a repetition. */
function field(lo: number, hi: number, two = true): fc.Arbitrary<string> {
  const v = two ? pad2(lo, hi) : num(lo, hi);
  return fc.oneof(
    fc.constant('*'),
    v,
    fc.tuple(v, v).map(([a, b]) => `${a},${b}`),
    fc
      .tuple(fc.integer({ min: lo, max: hi }), fc.integer({ min: 0, max: hi - lo }))
      .map(([a, span]) => `${a}..${Math.min(hi, a + span)}`),
    fc.tuple(v, fc.integer({ min: 1, max: Math.max(1, hi - lo) })).map(([a, r]) => `${a}/${r}`),
  );
}

const weekdays = fc.oneof(fc.constant(''), pick(['Mon ', 'Sat,Sun ', 'Mon..Fri ', 'Tue,Thu ', 'Fri ', 'Wed..Sun ']));

/** Calendar specs, mostly valid, sometimes not (ranges are not always sane). */
const calendarSpec: fc.Arbitrary<string> = fc.oneof(
  pick(['minutely', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'quarterly', 'semiannually']),
  fc
    .tuple(
      weekdays,
      field(2024, 2040, false),
      field(1, 12),
      fc.oneof(field(1, 31), field(1, 28)),
      fc.boolean(),
      field(0, 23),
      field(0, 59),
      fc.oneof(
        fc.constant(''),
        field(0, 59).map((s) => `:${s}`),
      ),
      pick(['', ' UTC', ' Europe/Paris', ' America/New_York']),
    )
    .map(([w, y, m, d, eom, h, mi, s, z]) => `${w}${y}-${m}${eom ? '~' : '-'}${d} ${h}:${mi}${s}${z}`),
);

const otherSpec: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 1, max: 10 ** 7 }).map((ms) => `every ${ms}ms`),
  fc.tuple(fc.integer({ min: 1, max: 48 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `every ${h}h${m}m`),
  fc
    .tuple(fc.integer({ min: 0, max: 2 ** 31 }), fc.integer({ min: 1, max: 1440 }))
    .map(([s, m]) => `R/${new Date(s * 1000).toISOString()}/PT${m}M`),
  fc
    .tuple(num(0, 59), num(0, 23), pick(['*', '1', '15', '1-10', '*/5']), pick(['*', '3', '1,6']), pick(['*', '1-5', '0,6']))
    .map((f) => f.join(' ')),
  pick(['@daily', '@hourly', '@weekly', '@monthly', '@yearly', '*/7 * * * * *']),
);

const base = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2060, 0, 1) }).map((ms) => new Date(ms));

function tryParse(spec: string, timezone: string): Timer | null {
  try {
    return parseTimer(spec, { timezone });
  } catch (err) {
    if (err instanceof TimerSyntaxError) return null;
    throw err;
  }
}

function elapses(t: Timer, from: Date, n: number): number[] {
  const out: number[] = [];
  let at: Date | null = from;
  for (let i = 0; i < n && at; i++) {
    at = t.next(at);
    if (at) out.push(at.getTime());
  }
  return out;
}

describe('timer properties', () => {
  it('next strictly increases along a chain', () => {
    fc.assert(
      fc.property(fc.oneof(calendarSpec, otherSpec), pick(ZONES), base, (spec, tz, from) => {
        const t = tryParse(spec, tz);
        if (!t) return;
        const xs = elapses(t, from, 8);
        let prev = from.getTime();
        for (const x of xs) {
          expect(x).toBeGreaterThan(prev);
          prev = x;
        }
      }),
      { numRuns: 300 },
    );
  });

  it('parseTimer(t.normalized) gives the same elapses as t', () => {
    fc.assert(
      fc.property(fc.oneof(calendarSpec, otherSpec), pick(ZONES), base, (spec, tz, from) => {
        const t = tryParse(spec, tz);
        if (!t) return;
        const again = parseTimer(t.normalized, { timezone: tz });
        expect(again.kind).toBe(t.kind);
        expect(again.normalized).toBe(t.normalized);
        expect(elapses(again, from, 6)).toEqual(elapses(t, from, 6));
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary strings either parse or throw TimerSyntaxError, quickly', () => {
    const alphabet = fc.constantFrom(...'0123456789*-~:.,/ @MonTueFriSatUTCPTHRevry'.split(''));
    const noisy = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.array(alphabet, { maxLength: 30 }).map((cs) => cs.join('')),
      fc.tuple(calendarSpec, fc.string({ maxLength: 3 }), fc.nat(40)).map(([s, ins, at]) => s.slice(0, at) + ins + s.slice(at)),
    );
    fc.assert(
      fc.property(noisy, pick(ZONES), base, (spec, tz, from) => {
        const t = tryParse(spec, tz);
        if (!t) return;
        const started = performance.now();
        elapses(t, from, 3);
        expect(performance.now() - started).toBeLessThan(1000);
      }),
      { numRuns: 1000 },
    );
  });

  it('a spec that never elapses again answers null without hanging', () => {
    for (const spec of [
      '*-02-30',
      '*-04-31 12:00',
      'Mon 2027-02-29',
      '2020-01-01',
      '*-*~28 Europe/Paris',
      'Sat *-02-29 02:30 Europe/Paris',
    ]) {
      const t = parseTimer(spec, { timezone: 'America/New_York' });
      const started = performance.now();
      let at: Date | null = new Date('2026-01-01T00:00:00Z');
      for (let i = 0; i < 50 && at; i++) at = t.next(at);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });
});
