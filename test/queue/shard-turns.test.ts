/** Which shard an executor takes from next (src/executor/shard-turns.ts), with a fake wall clock. */
import { describe, expect, it } from 'vitest';
import { ShardTurns } from '../../src/executor/shard-turns.js';

describe('shard turns', () => {
  it('goes round the shards in turn and passes over the dry ones', () => {
    const turns = new ShardTurns(3);
    expect([turns.next(), turns.next(), turns.next(), turns.next()]).toEqual([0, 1, 2, 0]);
    expect(turns.answered(1, 10, 4, -1, turns.ticket(1))).toBe(false);
    expect([turns.next(), turns.next(), turns.next()]).toEqual([2, 0, 2]);
  });

  it('is exhausted when every shard is dry, and a wake-up brings one shard back', () => {
    const turns = new ShardTurns(3);
    for (const i of [0, 1]) expect(turns.answered(i, 5, 0, -1, turns.ticket(i))).toBe(false);
    expect(turns.answered(2, 5, 1, -1, turns.ticket(2))).toBe(true);
    turns.wake(1);
    expect(turns.allDry).toBe(false);
    expect([turns.next(), turns.next()]).toEqual([1, 1]);
  });

  it('gives a dry shard whose marker fired the next turn', () => {
    const turns = new ShardTurns(4);
    turns.answered(2, 5, 0, -1, turns.ticket(2));
    expect([turns.next(), turns.next()]).toEqual([0, 1]);
    turns.wake(2, true);
    expect(turns.next()).toBe(2);
    turns.wake(0, true);
    expect(turns.next()).toBe(3);
  });

  it('does not let a take sent before a wake-up mark its shard dry', () => {
    const turns = new ShardTurns(2);
    const ticket = turns.ticket(0);
    turns.wake(0);
    expect(turns.answered(0, 5, 0, -1, ticket)).toBe(false);
    expect(turns.isDry(0)).toBe(false);
  });

  it('a full take keeps its shard in turn; a dry shard wakes at its due time', () => {
    let now = 1000;
    const turns = new ShardTurns(2, () => now);
    turns.answered(0, 5, 0, 1500, turns.ticket(0));
    turns.answered(1, 5, 0, 1200, turns.ticket(1));
    expect(turns.nextDue()).toBe(1200);
    now = 1300;
    expect(turns.next()).toBe(1);
    expect(turns.isDry(0)).toBe(true);
    expect(turns.answered(1, 5, 5, -1, turns.ticket(1))).toBe(false);
    expect(turns.isDry(1)).toBe(false);
    turns.wakeAll();
    expect(turns.allDry).toBe(false);
    expect(turns.nextDue()).toBe(-1);
  });

  it('prefers a shard with no take in flight, so that a shard that does not answer holds one take only', () => {
    const turns = new ShardTurns(3);
    turns.sent(0);
    expect([turns.next(), turns.next(), turns.next()]).toEqual([1, 2, 1]);
    turns.sent(1);
    turns.sent(2);
    expect(turns.next()).toBe(2);
    turns.settled(1);
    expect(turns.next()).toBe(1);
  });
});
