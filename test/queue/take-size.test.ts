import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../src/index.js';
import { maxTakeSize, TakeSizer } from '../../src/queue/take-size.js';
import { closeAll, openQueue, redisUrl, track, uniqueQueue, until } from '../helpers/setup.js';

describe('take size', () => {
  it('takes half the slots (rounded up) at most, so that two takes in flight cover them', () => {
    expect(maxTakeSize(1)).toBe(1);
    expect(maxTakeSize(3)).toBe(2);
    expect(maxTakeSize(16)).toBe(8);
    expect(maxTakeSize(40)).toBe(20);
    expect(maxTakeSize(100)).toBe(50);
  });

  it('asks for the most until both runs and calls were timed', () => {
    const s = new TakeSizer(100);
    expect(s.size).toBe(50);
    s.ranFor(10);
    expect(s.size).toBe(50);
    s.answeredIn(0.3);
    expect(s.size).toBe(3); // 100 slots × 0.3 ms ÷ 10 ms
  });

  it('gives instant jobs the largest batches and long jobs batches of what frees up in a round trip', () => {
    const instant = new TakeSizer(100);
    instant.ranFor(0.02);
    instant.answeredIn(1);
    expect(instant.size).toBe(50);
    const long = new TakeSizer(100);
    long.ranFor(1000);
    long.answeredIn(1);
    expect(long.size).toBe(1);
    const small = new TakeSizer(4);
    small.ranFor(0.1);
    small.answeredIn(2);
    expect(small.size).toBe(2);
  });

  it('follows the running means: batches grow as Redis answers slower and shrink as runs lengthen', () => {
    const s = new TakeSizer(100);
    s.ranFor(10);
    s.answeredIn(0.5);
    const before = s.size;
    for (let i = 0; i < 200; i++) s.answeredIn(2);
    expect(s.size).toBeGreaterThan(before);
    expect(s.size).toBe(20); // 100 × 2 ÷ 10, the mean having converged
    for (let i = 0; i < 200; i++) s.ranFor(100);
    expect(s.size).toBe(2);
  });
});

describe('an executor\'s take size', () => {
  afterEach(closeAll);

  const runAll = async (jobs: number, handler: () => unknown) => {
    const name = uniqueQueue();
    await openQueue(name).submitBulk(Array.from({ length: jobs }, () => ({ task: 't', group: 'g' })));
    const w = track(new Worker(name, { t: handler }, { connection: redisUrl(), concurrency: 16 }));
    let done = 0;
    w.on('completed', () => done++);
    await until(w, 'completed', () => done === jobs);
    return w;
  };

  it('stays at half its 16 slots for instant jobs', async () => {
    const w = await runAll(64, () => 'ok');
    expect(w.takeSize).toBe(8);
  });

  it('shrinks once it has timed jobs that run far longer than a call to Redis', async () => {
    const w = await runAll(48, () => new Promise((r) => setTimeout(r, 30)));
    expect(w.takeSize).toBeLessThan(8);
  });
});
