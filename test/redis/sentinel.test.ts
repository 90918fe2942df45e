/**
 * A queue under Sentinel: a manual failover (SENTINEL FAILOVER) in the middle of a drain. With
 * `durability: 'replicated'` every acknowledged submit and finish has reached the replica, so
 * none is lost when it takes over (see test/fixtures/failover.ts; `npm run soak` for the counts
 * without it).
 */
import { describe, expect, it } from 'vitest';
import { drainThrough } from '../fixtures/failover.js';

describe('under Sentinel, a manual failover mid-drain', () => {
  it('loses no acknowledged job with durability "replicated"', async () => {
    const counts = await drainThrough({ fault: 'sentinel', durability: 'replicated', jobs: 5000 });
    expect(counts.acknowledged).toBe(5000);
    expect(counts.lost).toBe(0);
    expect(counts.missing).toBe(0);
  }, 120_000);
});
