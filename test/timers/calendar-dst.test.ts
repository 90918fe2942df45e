import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseCalendar } from '../../src/timers/calendar.js';
import { elapses, UNUSUAL_ZONES } from '../helpers/calendar.js';

interface DstCase {
  spec: string;
  tz: string;
  /** The offset change this case starts shortly before. */
  change: string;
  base: string;
  normalized: string;
  next: string[];
  /** Starts from which systemd-analyze gave up; `next` then holds its answer from a later start (see the generator). */
  stuckAfter?: string[];
}

// Recorded from systemd-analyze by scripts/gen-dst-fixtures.mjs: every offset change of 2026-2027
// in 15 zones (30-minute, midnight, 02:45 and two-hour changes among them), 9 specs each.
const fixture = JSON.parse(readFileSync(new URL('../fixtures/calendar/dst.json', import.meta.url), 'utf8')) as {
  cases: DstCase[];
};

describe('calendar events agree with systemd-analyze 252 at every kind of DST change (fixtures)', () => {
  it('covers the unusual changes', () => {
    const zones = new Set(fixture.cases.map((c) => c.tz));
    for (const z of UNUSUAL_ZONES) expect(zones.has(z), z).toBe(true);
    expect(fixture.cases.length).toBeGreaterThanOrEqual(500);
  });

  it('gives the same elapses around each change, both directions', () => {
    const failures: string[] = [];
    for (const c of fixture.cases) {
      const got = elapses(c.spec, c.tz, c.base, c.next.length);
      const normalized = parseCalendar(c.spec, c.tz).normalized;
      if (normalized !== c.normalized || got.join(' ') !== c.next.join(' '))
        failures.push(`${c.spec} tz=${c.tz} base=${c.base}\n  want ${c.next.join(' ')}\n  got  ${got.join(' ')}`);
    }
    expect(`${failures.length} of ${fixture.cases.length} differ\n${failures.slice(0, 10).join('\n')}`).toBe(
      `0 of ${fixture.cases.length} differ\n`,
    );
  });

  it('never answers an elapse that is not after its start', () => {
    for (const c of fixture.cases) {
      const timer = parseCalendar(c.spec, c.tz);
      for (let t = Date.parse(c.change) - 7_200_000; t < Date.parse(c.change) + 7_200_000; t += 300_000) {
        const n = timer.next(new Date(t));
        expect(n === null || n.getTime() > t, `${c.spec} ${c.tz} after ${new Date(t).toISOString()}`).toBe(true);
      }
    }
  });
});
