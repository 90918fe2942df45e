/**
 * Queues under Sentinel: a failover in the middle of a drain. With `durability: 'replicated'`
 * every acknowledged submit and finish has reached the replica, so none is lost when it takes
 * over (see test/fixtures/failover.ts; `npm run soak` for the counts without it). The new primary
 * acknowledges a replicated write only once it has a replica again: Sentinel turns the old
 * primary into one some 10-15 s after it is back, which these drains wait out.
 */
import { describe, expect, it } from 'vitest';
import { drainThrough } from '../fixtures/failover.js';

describe('under Sentinel, a failover mid-drain', () => {
  it('loses no acknowledged job of a queue with durability "replicated" (SENTINEL FAILOVER)', async () => {
    const counts = await drainThrough({ fault: 'sentinel', durability: 'replicated', jobs: 5000 });
    expect(counts.acknowledged).toBe(5000);
    expect(counts.lost, counts.account).toBe(0);
    expect(counts.missing, counts.account).toBe(0);
  }, 120_000);

  it('goes on after kill -9 of the primary of a sharded queue, and loses no acknowledged job when replicated', async () => {
    const r = await drainThrough({
      fault: 'sentinel-kill',
      durability: 'replicated',
      jobs: 3000,
      shards: 3,
      executors: 3,
      concurrency: 10,
      groups: 100,
      leaseMs: 3000,
    });
    expect(r.struck).toEqual([0, 1, 2]);
    expect(r.promotedMs).not.toBeNull();
    // (the down-after, the election, and the old primary's return as the new one's replica)
    expect(r.recoveryMs).not.toBeNull();
    expect(r.recoveryMs).toBeLessThan(40_000);
    // (a job taken just before the kill, its take not on the replica yet, runs again: at-least-once;
    // but none runs again after its finish was acknowledged, which `lost` counts)
    expect(r.unfinished, r.account).toBe(0);
    expect(r.succeeded, r.account).toBe(3000);
    expect(r.missing, r.account).toBe(0);
    expect(r.lost, r.account).toBe(0);
  }, 120_000);
});
