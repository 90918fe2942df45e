import { afterEach, describe, expect, it } from 'vitest';
import { maxTakeSize, PACE_HEADROOM, TakeSizer } from '../../src/executor/take-size.js';
import { Worker } from '../../src/index.js';
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

describe('start pace', () => {
  /** A sizer of 100 slots timed at 10 ms runs and 0.3 ms calls (takes of 3). */
  const timed = () => {
    const s = new TakeSizer(100);
    s.ranFor(10);
    s.answeredIn(0.3);
    return s;
  };

  it('paces only jobs that run long against a call, once they were timed', () => {
    const fresh = new TakeSizer(100);
    expect(fresh.paces).toBe(false);
    fresh.ranFor(10);
    expect(fresh.paces).toBe(false); // calls not timed: takes are still the largest
    const instant = new TakeSizer(100);
    instant.ranFor(0.02);
    instant.answeredIn(1);
    expect(instant.paces).toBe(false);
    expect(timed().paces).toBe(true);
  });

  it('allows PACE_HEADROOM × slots ÷ run time starts a ms, saving up two takes at most', () => {
    const s = timed();
    const perMs = (PACE_HEADROOM * 100) / 10;
    s.paced(6, 1000); // a take spends what was saved up (two takes of 3)
    expect(s.allowed(1000)).toBe(0);
    expect(s.allowed(1000.2)).toBeCloseTo(0.2 * perMs);
    expect(s.allowed(1000.6)).toBe(6); // 7.5 accrued, capped at two takes
    expect(s.allowed(2000)).toBe(6);
    s.paced(2, 1000.2);
    expect(s.allowed(1000.2)).toBeCloseTo(0.2 * perMs - 2);
    expect(s.msUntil(3, 1000.2)).toBeCloseTo((3 - (0.2 * perMs - 2)) / perMs);
    expect(s.msUntil(1, 2000)).toBe(0);
  });
});

describe("an executor's take size", () => {
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

  it("spreads a backlog's starts over the run time instead of refilling freed slots in waves", () => {
    // 40 slots of 50 ms jobs, calls answered in 1 ms, on a clock the test moves: the first 40
    // start together and end together; refilled at once they would start together again every
    // cycle. Paced, they start at about 1.25 × 40 ÷ 50 ms = one a ms.
    const s = new TakeSizer(40);
    s.ranFor(50);
    s.answeredIn(1);
    const ends: number[] = Array.from({ length: 40 }, () => 50);
    const starts: number[] = [];
    for (let now = 50; now < 1000; now += 0.25) {
      const free = ends.filter((e) => e <= now).length;
      const n = Math.min(free, Math.floor(s.allowed(now)), s.size);
      if (n < 1) continue;
      s.paced(n, now);
      for (let i = 0; i < n; i++) {
        ends.splice(
          ends.findIndex((e) => e <= now),
          1,
        );
        ends.push(now + 50);
        starts.push(now);
      }
    }
    // every slot keeps working, at about the pace's rate (not slower than the slots' own)
    expect(starts.length).toBeGreaterThan((950 / 50) * 40 * 0.9);
    // and no 5 ms holds the starts of half the slots
    let bunched = 0;
    for (let i = 0, j = 0; i < starts.length; i++) {
      while (starts[i] - starts[j] > 5) j++;
      bunched = Math.max(bunched, i - j + 1);
    }
    expect(bunched).toBeLessThan(20);
  });

  it('runs a backlog with never more jobs at once than slots', async () => {
    const name = uniqueQueue();
    const jobs = 320;
    await openQueue(name).submitBulk(Array.from({ length: jobs }, () => ({ task: 't', group: 'g' })));
    let running = 0;
    let most = 0;
    const w = track(
      new Worker(
        name,
        {
          t: async () => {
            most = Math.max(most, ++running);
            await new Promise((r) => setTimeout(r, 50));
            running--;
          },
        },
        { connection: redisUrl(), concurrency: 40 },
      ),
    );
    let done = 0;
    w.on('completed', () => done++);
    await until(w, 'completed', () => done === jobs);
    expect(most).toBeLessThanOrEqual(40);
  });

  it('is not shrunk by runs that hung until their timebox aborted them', async () => {
    // Four runs that ignore their signal are settled after maxRuntime + grace (400 ms each);
    // timed, they would make the executor's runs seem to take tens of ms and its takes tiny.
    const name = uniqueQueue();
    const q = openQueue(name);
    await q.submitBulk(Array.from({ length: 4 }, () => ({ task: 'hang', group: 'g', maxRuntime: 300, maxRetries: 0 })));
    await q.submitBulk(Array.from({ length: 64 }, () => ({ task: 't', group: 'g' })));
    const w = track(
      new Worker(
        name,
        { t: () => 'ok', hang: () => new Promise(() => {}) },
        {
          connection: redisUrl(),
          concurrency: 16,
          graceMs: 100,
        },
      ),
    );
    let completed = 0;
    let failed = 0;
    w.on('completed', () => completed++);
    w.on('failed', () => failed++);
    await until(w, 'failed', () => failed === 4 && completed === 64);
    expect(w.takeSize).toBe(8);
  });

  it('shrinks once it has timed jobs that run far longer than a call to Redis', async () => {
    const w = await runAll(48, () => new Promise((r) => setTimeout(r, 30)));
    expect(w.takeSize).toBeLessThan(8);
  });
});
