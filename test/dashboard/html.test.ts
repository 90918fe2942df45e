/** The dashboard's words for numbers and times: a duration never reads as its next unit's threshold, and counts agree with their noun. */
import { describe, expect, it } from 'vitest';
import { counted, duration } from '../../src/dashboard/html.js';

describe('dashboard wording', () => {
  it('chooses the unit of a duration on its rounded count', () => {
    // (each of these read as its next unit's threshold: `120 s` beside `2 min`)
    expect(duration(119_600)).toBe('2 min');
    expect(duration(999.6)).toBe('1 s');
    expect(duration(119.6 * 60_000)).toBe('2 h');
    expect(duration(47.6 * 3_600_000)).toBe('2 d');
    expect(duration(119_400)).toBe('119 s');
    expect(duration(850)).toBe('850 ms');
    expect(duration(-90_000)).toBe('-90 s');
    for (let ms = 0; ms < 5 * 86_400_000; ms += 7_919) {
      const [n, unit] = duration(ms).split(' ');
      const limit = { ms: 1000, s: 120, min: 120, h: 48, d: Number.POSITIVE_INFINITY }[unit]!;
      expect(Number(n), `${ms} ms`).toBeLessThan(limit);
    }
  });

  it('counts one line as a line', () => {
    expect(counted(1, 'line')).toBe('1 line');
    expect(counted(0, 'line')).toBe('0 lines');
    expect(counted(1200, 'line')).toBe('1,200 lines');
  });
});
