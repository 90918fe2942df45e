import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/util/batcher.js';

/** A batcher whose calls stay unanswered until the test answers them, in order. */
function gated(maxInFlight?: number) {
  const calls: number[][] = [];
  const answers: Array<() => void> = [];
  const batcher = new Batcher<number>(
    (items) => {
      calls.push(items);
      return new Promise<void>((resolve) => answers.push(resolve));
    },
    { defer: (flush) => void Promise.resolve().then(flush), maxInFlight },
  );
  const answer = async () => {
    answers.shift()!();
    // let the answered call's continuation send what waited
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { batcher, calls, answer, settle };
}

describe('a batcher', () => {
  it('sends items added together in one call, and without a cap a call per turn', async () => {
    const { batcher, calls, settle } = gated();
    batcher.add(1);
    batcher.add(2);
    await settle();
    batcher.add(3);
    await settle();
    expect(calls).toEqual([[1, 2], [3]]);
  });

  it('with one call in flight at most, holds later items until the answer and then sends them together', async () => {
    const { batcher, calls, answer, settle } = gated(1);
    batcher.add(1);
    await settle();
    batcher.add(2);
    await settle();
    batcher.add(3);
    await settle();
    expect(calls).toEqual([[1]]);
    await answer();
    expect(calls).toEqual([[1], [2, 3]]);
    // an item withdrawn while it waited is not sent
    batcher.add(4);
    batcher.add(5);
    await settle();
    expect(batcher.withdraw(4)).toBe(true);
    await answer();
    expect(calls).toEqual([[1], [2, 3], [5]]);
    // one sent already (or never added) is not withdrawn
    expect(batcher.withdraw(5)).toBe(false);
    expect(batcher.withdraw(4)).toBe(false);
    expect(batcher.waiting).toBe(false);
  });

  it('drains what waits behind a full window', async () => {
    const { batcher, calls, answer, settle } = gated(1);
    batcher.add(1);
    await settle();
    batcher.add(2);
    let drained = false;
    const done = batcher.drain().then(() => (drained = true));
    await settle();
    expect(calls).toEqual([[1]]);
    await answer();
    expect(calls).toEqual([[1], [2]]);
    expect(drained).toBe(false);
    await answer();
    await done;
    expect(drained).toBe(true);
  });
});
