/** The server clock estimate: a server time the round trip allows for is no jump; one past it by a second is. */
import { describe, expect, it } from 'vitest';
import { type ClockJump, ServerClock } from '../../src/redis/server-clock.js';

describe('ServerClock', () => {
  it('expects nothing before an answer, then follows the server on the monotonic clock', () => {
    let mono = 1000;
    const clock = new ServerClock(undefined, () => mono);
    expect(clock.expect(500)).toBeNull();
    expect(clock.observe(5_000_000, 1000, 1010)).toBe(0);
    mono = 3005;
    expect(clock.now()).toBe(5_002_000);
    expect(clock.expect(500)).toEqual({ at: 5_002_000, toleranceMs: 1000 });
    expect(clock.expect(5000)?.toleranceMs).toBe(5000);
  });

  it('takes a slow answer for no jump, and reports a step either way once', () => {
    const jumps: ClockJump[] = [];
    const clock = new ServerClock(
      (j) => jumps.push(j),
      () => 0,
    );
    clock.observe(10_000, 0, 0);
    // sent at 1,000, answered at 4,000: the server may have read its clock at 4,000
    expect(clock.observe(14_000, 1000, 4000)).toBe(0);
    // 2 s later on the monotonic clock, the server says an hour and 2 s later
    expect(clock.observe(3_600_000 + 16_000, 6000, 6000)).toBeGreaterThan(3_590_000);
    expect(clock.observe(3_600_000 + 17_000, 7000, 7000)).toBe(0);
    expect(clock.observe(18_000, 8000, 8000)).toBeLessThan(-3_590_000);
    expect(jumps.map((j) => Math.round(j.jumpMs / 60_000))).toEqual([60, -60]);
  });
});
