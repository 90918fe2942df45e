import { describe, expect, it } from 'vitest';
import { TakePlan } from '../../src/executor/take-plan.js';
import { PACE_HEADROOM, TakeSizer } from '../../src/executor/take-size.js';

/** A plan over a hand-set clock; `wakes` records the pace's wake-up requests. */
function planFor(concurrency: number, sizer = new TakeSizer(concurrency)) {
  const clock = { mono: 1000, wall: 1_700_000_000_000 };
  const wakes: number[] = [];
  const plan = new TakePlan({
    concurrency,
    sizer,
    fallbackWakeMs: 30_000,
    wakeIn: (ms) => wakes.push(ms),
    clock: { now: () => clock.mono, wall: () => clock.wall },
  });
  return { plan, clock, wakes };
}

/** Sends a take of `n` and answers it with `got` jobs (the queue's next due time `due`). */
function takeAndAnswer(plan: TakePlan, n: number, got: number, due = 0): void {
  const ticket = plan.sent(n);
  plan.answered(n, got, due, ticket);
  plan.settled(n);
}

describe('take plan: how many', () => {
  it('takes for the free slots, one full take (half the slots) at most', () => {
    const { plan } = planFor(10);
    expect(plan.forLoop(0, false)).toBe(5);
    expect(plan.forLoop(7, false)).toBe(3);
    expect(plan.forLoop(10, false)).toBe(0);
    expect(plan.idle(false)).toBe('wait');
  });

  it('counts the slots that takes in flight asked for as taken', () => {
    const { plan } = planFor(10);
    plan.sent(5);
    plan.sent(5);
    expect(plan.forFinish(0)).toBe(0);
    plan.settled(5);
    expect(plan.forFinish(0)).toBe(5);
  });

  it('sends a second take while one is in flight only when it is full, and no third', () => {
    const { plan } = planFor(10);
    expect(plan.forLoop(0, false)).toBe(5);
    plan.sent(5);
    expect(plan.forLoop(3, false)).toBe(0); // 2 free: not a full take
    expect(plan.idle(false)).toBe('wait');
    expect(plan.forLoop(0, false)).toBe(5);
    plan.sent(5);
    expect(plan.inFlight).toBe(2);
    const wide = planFor(100).plan;
    wide.sent(10);
    wide.sent(10);
    expect(wide.forLoop(0, false)).toBe(0); // a full take is free, but two are in flight
  });

  it('lets a finish call take what is free whatever is in flight', () => {
    const { plan } = planFor(100);
    plan.sent(50);
    expect(plan.forFinish(47)).toBe(3);
    plan.sent(3);
    expect(plan.forFinish(40)).toBe(7);
  });

  it('leaves the take to the finish call while finished runs wait to be sent', () => {
    const { plan } = planFor(10);
    expect(plan.forLoop(4, true)).toBe(0);
    expect(plan.forFinish(4)).toBe(5);
  });

  it('takes nothing once closed', () => {
    const { plan } = planFor(10);
    plan.close();
    expect(plan.forLoop(0, false)).toBe(0);
    expect(plan.forFinish(0)).toBe(0);
  });
});

describe('take plan: a dry queue', () => {
  it('takes nothing after a short take until the loop wakes, except through finish calls', () => {
    const { plan, clock } = planFor(10);
    takeAndAnswer(plan, 5, 2, clock.wall + 300);
    expect(plan.forLoop(2, false)).toBe(0);
    expect(plan.forFinish(2)).toBe(5);
    expect(plan.idle(true)).toBe('finishes');
    expect(plan.idle(false)).toBe('sleep');
    expect(plan.sleepMs()).toBe(300); // until the next stuck job is due
    plan.woken();
    expect(plan.forLoop(2, false)).toBe(5);
  });

  it('sleeps for the fallback without a due job, and 5 ms at least', () => {
    const { plan, clock } = planFor(10);
    takeAndAnswer(plan, 5, 0, 0);
    expect(plan.sleepMs()).toBe(30_000);
    plan.woken();
    takeAndAnswer(plan, 5, 0, clock.wall - 100);
    expect(plan.sleepMs()).toBe(5);
  });

  it('does not let a take sent before a wake-up mark the queue dry after it', () => {
    const { plan } = planFor(10);
    takeAndAnswer(plan, 5, 0);
    const ticket = plan.sent(5); // a finish call's take while the loop sleeps
    plan.sleepMs();
    plan.woken();
    plan.answered(5, 1, 0, ticket);
    plan.settled(5);
    expect(plan.forLoop(1, false)).toBe(5);
  });

  it("counts the queue wet again when a finish call's take comes back full", () => {
    const { plan } = planFor(10);
    takeAndAnswer(plan, 5, 1);
    expect(plan.forLoop(1, false)).toBe(0);
    takeAndAnswer(plan, 4, 4);
    expect(plan.forLoop(5, false)).toBe(5);
  });
});

describe('take plan: a failed take', () => {
  it('takes nothing, not even through finish calls, until its backoff has passed', () => {
    const { plan } = planFor(10);
    plan.sent(5);
    plan.failedTake();
    expect(plan.idle(false)).toBe('wait'); // the take is still in flight
    plan.settled(5);
    expect(plan.forLoop(0, false)).toBe(0);
    expect(plan.forFinish(0)).toBe(0);
    expect(plan.idle(false)).toBe('back-off');
    expect(plan.backOff()).toBe(100);
    plan.backedOff();
    expect(plan.forLoop(0, false)).toBe(5);
  });

  it('doubles the backoff with each failure in a row up to 2 s, and starts over after an answer', () => {
    const { plan } = planFor(10);
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      plan.sent(5);
      plan.failedTake();
      plan.settled(5);
      waits.push(plan.backOff());
      plan.backedOff();
    }
    expect(waits).toEqual([100, 200, 400, 800, 1600, 2000, 2000]);
    takeAndAnswer(plan, 5, 5);
    plan.sent(5);
    plan.failedTake();
    plan.settled(5);
    expect(plan.backOff()).toBe(100);
  });
});

describe('take plan: the pace under a backlog', () => {
  /** 100 slots timed at 10 ms runs and 0.3 ms calls: full takes of 3, paced at 12.5 starts a ms. */
  const timed = () => {
    const s = new TakeSizer(100);
    s.ranFor(10);
    s.answeredIn(0.3);
    return s;
  };
  const perMs = (PACE_HEADROOM * 100) / 10;

  it('does not pace until a take came back full', () => {
    const { plan, wakes } = planFor(100, timed());
    for (let i = 0; i < 5; i++) {
      expect(plan.forLoop(0, false)).toBe(3);
      plan.sent(3);
      plan.settled(3); // not answered: no backlog known
    }
    expect(wakes).toEqual([]);
  });

  it("holds a backlog's takes to the pace, and asks to be woken when it allows the rest", () => {
    const { plan, clock, wakes } = planFor(100, timed());
    takeAndAnswer(plan, 3, 3); // a backlog
    // the pace saved up two takes (6 starts): two full takes go at once
    expect(plan.forLoop(0, false)).toBe(3);
    plan.sent(3);
    expect(plan.forLoop(0, false)).toBe(3);
    plan.sent(3);
    plan.answered(3, 3, 0, 0);
    plan.settled(3);
    plan.answered(3, 3, 0, 0);
    plan.settled(3);
    expect(wakes).toEqual([]);
    // nothing allowed now: woken when three are
    expect(plan.forLoop(0, false)).toBe(0);
    expect(plan.forFinish(0)).toBe(0);
    expect(wakes.length).toBe(2);
    expect(wakes[0]).toBeCloseTo(3 / perMs);
    // 0.1 ms later one start is allowed, and goes
    clock.mono += 0.1;
    expect(plan.forLoop(0, false)).toBe(1);
    plan.sent(1);
    plan.answered(1, 1, 0, 0);
    plan.settled(1);
    expect(plan.forLoop(0, false)).toBe(0);
    clock.mono += 3 / perMs;
    expect(plan.forLoop(0, false)).toBe(3);
  });

  it('stops pacing once a take comes back short', () => {
    const { plan, clock, wakes } = planFor(100, timed());
    takeAndAnswer(plan, 3, 3); // a backlog
    takeAndAnswer(plan, 3, 3);
    takeAndAnswer(plan, 3, 3); // what the pace saved up is spent
    clock.mono += 10;
    takeAndAnswer(plan, 3, 2); // short: the queue ran dry
    plan.sleepMs();
    plan.woken();
    // paced, the pace would allow two of these three takes
    for (let i = 0; i < 3; i++) {
      expect(plan.forLoop(0, false)).toBe(3);
      plan.sent(3);
      plan.settled(3);
    }
    expect(wakes).toEqual([]);
  });

  it('never paces instant jobs', () => {
    const sizer = new TakeSizer(100);
    sizer.ranFor(0.02);
    sizer.answeredIn(1);
    const { plan, wakes } = planFor(100, sizer);
    for (let i = 0; i < 10; i++) takeAndAnswer(plan, 50, 50);
    expect(plan.forLoop(0, false)).toBe(50);
    expect(wakes).toEqual([]);
  });
});
