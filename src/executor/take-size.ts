/**
 * How many jobs one take asks for. A batch pays a call's fixed cost (in Redis and in the
 * executor) once for many jobs, but the slots of one batch start together, end together when
 * their jobs take alike, and free up together: a freed slot waits for the rest of its batch, and
 * a job of another group that arrives meanwhile waits for the next batch. So a batch is what
 * frees up while one call travels (slots × round trip ÷ run time), no larger: a freed slot then
 * waits for its batch no longer than for the call that refills it. Instant jobs get the largest
 * batches; long ones small batches, which keep slots busy and new groups' waits short (10 ms
 * jobs at 100 slots: batches of about 3, which halved a light tenant's wait beside a flood
 * against batches of 25). When Redis is busy its answers slow down and batches grow again, each
 * job then costing it less. The cap is the slots shared among the takes an executor keeps in
 * flight (two: half the slots each), so those takes cover every slot and Redis works on one
 * while the other's answer travels; a cap of a quarter cost instant jobs a tenth more Redis CPU
 * each (more, smaller calls). Few slots are split the same way: with all of them in one take,
 * one call was in flight at a time and Redis idled while its answer travelled and its jobs ran
 * (instant jobs at 16 slots: 19,300 jobs/s in one take, 28,200 in two halves).
 *
 * With a backlog of jobs that run long against a call, one more bound spreads the starts: the
 * pace. Two takes in flight refill freed slots at twice the rate slots free up on average, so
 * runs that end together (a pause of the executor, timers that fire in one turn) are refilled
 * together, and over many cycles the starts bunch into half of each run time: the slots then
 * free in waves, and a job of a new group that arrives between waves waits for the next one.
 * Under a backlog the starts are held to PACE_HEADROOM × slots ÷ run time (a bucket that saves
 * up two takes at most), so they bunch into no less than 1 ÷ PACE_HEADROOM of a run time. The
 * pace is above the rate the slots can sustain, so it costs a backlog little of its rate (10 ms
 * jobs at 100 slots: 1-2%); it costs Redis more CPU a job while Redis is far from busy (runs
 * that end apart go in smaller finish calls). See benchmarks/README.md.
 */

/** Takes one executor keeps in flight at most while work lasts. */
export const MAX_TAKES_IN_FLIGHT = 2;

/** Most jobs one take asks for: the slots' share per take in flight (at least one). */
export function maxTakeSize(concurrency: number): number {
  return Math.ceil(concurrency / MAX_TAKES_IN_FLIGHT);
}

/** How far above the slots' own rate (slots ÷ run time) the pace lets a backlog start jobs. */
export const PACE_HEADROOM = 1.25;

/** Weight of a new observation in the running means. */
const WEIGHT = 0.05;

/** Sizes takes by the executor's own run times and call round trips (running means). */
export class TakeSizer {
  private runMs = 0;
  private callMs = 0;
  private readonly max: number;
  /** Starts the pace allowed as of `creditAt` (ms, performance.now()), not yet used. */
  private credit = 0;
  private creditAt = 0;

  constructor(private readonly concurrency: number) {
    this.max = maxTakeSize(concurrency);
  }

  /** A run took `ms` from its start to its end. */
  ranFor(ms: number): void {
    this.runMs = this.runMs === 0 ? ms : this.runMs + WEIGHT * (ms - this.runMs);
  }

  /** A take or finish call was answered `ms` after it was sent. */
  answeredIn(ms: number): void {
    this.callMs = this.callMs === 0 ? ms : this.callMs + WEIGHT * (ms - this.callMs);
  }

  /** Times the answer to a call just sent (a refused call is not timed); returns it unchanged. */
  timed<T>(reply: Promise<T>): Promise<T> {
    const sent = performance.now();
    void reply.then(
      () => this.answeredIn(performance.now() - sent),
      () => {},
    );
    return reply;
  }

  /** Jobs the next take asks for at most: the largest until runs and calls were timed. */
  get size(): number {
    if (this.runMs === 0 || this.callMs === 0) return this.max;
    const freedPerCall = (this.concurrency * this.callMs) / this.runMs;
    return Math.max(1, Math.min(this.max, Math.round(freedPerCall)));
  }

  /**
   * Whether a backlog's starts are paced: runs were timed and take long against a call (takes
   * are sized by run time, below the largest). Instant jobs are never paced.
   */
  get paces(): boolean {
    return this.runMs > 0 && this.size < this.max;
  }

  /** Starts per ms the pace allows. */
  private get pace(): number {
    return (PACE_HEADROOM * this.concurrency) / this.runMs;
  }

  /** Jobs the pace lets start at `now`: what it allowed since the last take, two takes' worth at most. */
  allowed(now: number): number {
    return Math.min(2 * this.size, this.credit + (now - this.creditAt) * this.pace);
  }

  /** Ms from `now` until the pace lets `n` jobs start (0: at once). */
  msUntil(n: number, now: number): number {
    return Math.max(0, (n - this.allowed(now)) / this.pace);
  }

  /** A paced take of `n` jobs was sent at `now`. */
  paced(n: number, now: number): void {
    this.credit = this.allowed(now) - n;
    this.creditAt = now;
  }
}
