import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTimer } from '../../src/timers/index.js';
import { zoneOffset } from '../../src/timers/zone.js';
import { offsetChanges, UNUSUAL_ZONES } from '../helpers/calendar.js';

const FROM = Date.UTC(2026, 0, 1);
const TO = Date.UTC(2028, 0, 1);
const DAY = 86_400_000;
const offset = (zone: string, ms: number) => zoneOffset(zone, Math.floor(ms / 1000));

/** The instants (ms) at which a zone's UTC offset changes in 2026-2027, found to the minute. */
const found = new Map<string, number[]>();
function changes(zone: string): number[] {
  const known = found.get(zone) ?? offsetChanges(zone, FROM, TO);
  found.set(zone, known);
  return known;
}

/** Every IANA zone with a change of UTC offset between 2026 and 2028 (monthly samples; no zone changes back within a month). */
const ZONES = Intl.supportedValuesOf('timeZone').filter((z) => {
  const first = offset(z, FROM);
  for (let t = FROM + 30 * DAY; t <= TO; t += 30 * DAY) if (offset(z, t) !== first) return true;
  return false;
});

/** Zones whose changes are unusual (30 minutes, at midnight, at 02:45, of two hours): sampled as often as all the others together. */

/** Specs of every kind that elapse forever (`once` is checked on its own). */
const SPECS = [
  '*:0/15',
  '*:0/20',
  '*:0/45',
  '*:05/20',
  '*-*-* 00..03:00/20',
  '*-*-* 00/2:30',
  'hourly',
  'daily',
  '*-*-* 02:30',
  '*-*-* 00:00',
  '*/20 * * * *',
  '*/45 * * * *',
  '0 * * * *',
  '30 2 * * *',
  '0 0 * * *',
  '15 0-3 * * *',
  '*/10 * * * * *',
  'every 20m',
  'every 1h from 2026-01-01T00:30:00',
  'R/2026-01-01T00:00:00/PT45M',
];

describe('every timer kind moves forward through the DST changes of 2026-2027', () => {
  it('finds the zones with changes', () => {
    for (const z of UNUSUAL_ZONES) expect(ZONES, z).toContain(z);
    expect(ZONES.length).toBeGreaterThan(50);
  });

  it('gives a next strictly after each start of a grid around a change, and a chain that increases', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...UNUSUAL_ZONES), fc.constantFrom(...ZONES)),
        fc.constantFrom(...SPECS),
        fc.nat(),
        (zone, spec, pick) => {
          const all = changes(zone);
          const change = all[pick % all.length]!;
          const timer = parseTimer(spec, { timezone: zone });
          // A grid of starts from 3 hours before the change to 3 hours after, every 7 minutes.
          for (let t = change - 3 * 3_600_000; t <= change + 3 * 3_600_000; t += 11 * 60_000) {
            const n = timer.next(new Date(t));
            expect(n, `${spec} in ${zone} after ${new Date(t).toISOString()}`).not.toBeNull();
            expect(n!.getTime(), `${spec} in ${zone} after ${new Date(t).toISOString()}`).toBeGreaterThan(t);
          }
          // A chain through the change.
          let at = change - 3 * 3_600_000;
          for (let i = 0; i < 40 && at < change + 3 * 3_600_000; i++) {
            const n = timer.next(new Date(at));
            expect(n, `${spec} in ${zone}: chain stops after ${new Date(at).toISOString()}`).not.toBeNull();
            expect(n!.getTime()).toBeGreaterThan(at);
            at = n!.getTime();
          }
        },
      ),
      { numRuns: 80 },
    );
  });

  it("gives the second pass of a repeated hour after a start inside it, as systemd does (Casablanca's 2026 Ramadan change)", () => {
    // systemd-analyze calendar --base-time='2026-02-15 02:07:00 UTC' --iterations=4 '*:0/15 Africa/Casablanca'
    const timer = parseTimer('*:0/15', { timezone: 'Africa/Casablanca' });
    const chain: string[] = [];
    let at = new Date('2026-02-15T02:07:00Z');
    for (let i = 0; i < 4; i++) {
      at = timer.next(at)!;
      chain.push(at.toISOString());
    }
    expect(chain).toEqual([
      '2026-02-15T02:15:00.000Z',
      '2026-02-15T02:30:00.000Z',
      '2026-02-15T02:45:00.000Z',
      '2026-02-15T03:00:00.000Z',
    ]);
  });

  it('a once timer elapses at its due date only', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), fc.integer({ min: -180, max: 180 }), (zone, minutes) => {
        const change = changes(zone)[0]!;
        const local = new Date(change + offset(zone, change) * 1000 + minutes * 60_000).toISOString().slice(0, 19);
        const timer = parseTimer(local, { timezone: zone });
        const due = timer.next(new Date(FROM))!;
        expect(due).not.toBeNull();
        expect(timer.next(new Date(due.getTime() - 1))!.getTime()).toBe(due.getTime());
        expect(timer.next(due)).toBeNull();
      }),
      { numRuns: 50 },
    );
  });
});
