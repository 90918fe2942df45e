import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { TimerSyntaxError } from '../../src/errors.js';
import { parseCalendar } from '../../src/timers/calendar.js';
import { elapses } from '../helpers/calendar.js';

interface Accepted {
  spec: string;
  tz: string;
  base: string;
  normalized: string;
  next: string[];
}
interface Rejected {
  spec: string;
  tz: string;
  error: string;
}

const dir = new URL('../fixtures/calendar/', import.meta.url);
const accepted = (JSON.parse(readFileSync(new URL('accepted.json', dir), 'utf8')) as { cases: Accepted[] }).cases;
const rejected = (JSON.parse(readFileSync(new URL('rejected.json', dir), 'utf8')) as { cases: Rejected[] }).cases;

describe('calendar events agree with systemd-analyze 252 (fixtures)', () => {
  it('has a meaningful fixture set', () => {
    expect(new Set(accepted.map((c) => c.spec)).size).toBeGreaterThanOrEqual(150);
    expect(rejected.length).toBeGreaterThanOrEqual(40);
  });

  it('computes the same normalized form and next elapses for every accepted case', () => {
    const failures: string[] = [];
    for (const c of accepted) {
      try {
        const timer = parseCalendar(c.spec, c.tz);
        const got = elapses(c.spec, c.tz, c.base, c.next.length + 1);
        const want = c.next;
        const sameNext =
          JSON.stringify(got.slice(0, want.length)) === JSON.stringify(want) && (want.length === 6 || got.length === want.length);
        if (timer.normalized !== c.normalized || !sameNext) {
          failures.push(
            `${JSON.stringify(c.spec)} tz=${c.tz} base=${c.base}\n  want ${c.normalized} ${want.join(' ')}\n  got  ${timer.normalized} ${got.join(' ')}`,
          );
        }
      } catch (err) {
        failures.push(`${JSON.stringify(c.spec)} tz=${c.tz}: threw ${(err as Error).message}`);
      }
    }
    expect(failures.slice(0, 20).join('\n')).toBe('');
  });

  it('rejects every spec systemd rejects, with a TimerSyntaxError', () => {
    const failures: string[] = [];
    for (const c of rejected) {
      try {
        const timer = parseCalendar(c.spec, c.tz);
        failures.push(`${JSON.stringify(c.spec)} accepted as ${timer.normalized}`);
      } catch (err) {
        if (!(err instanceof TimerSyntaxError)) failures.push(`${JSON.stringify(c.spec)} threw ${String(err)}`);
      }
    }
    expect(failures.join('\n')).toBe('');
  });
});
