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
 */

/** Takes one executor keeps in flight at most while work lasts. */
export const MAX_TAKES_IN_FLIGHT = 2;

/** Most jobs one take asks for: the slots' share per take in flight (at least one). */
export function maxTakeSize(concurrency: number): number {
  return Math.ceil(concurrency / MAX_TAKES_IN_FLIGHT);
}

/** Weight of a new observation in the running means. */
const WEIGHT = 0.05;

/** Sizes takes by the executor's own run times and call round trips (running means). */
export class TakeSizer {
  private runMs = 0;
  private callMs = 0;
  private readonly max: number;

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
    void reply.then(() => this.answeredIn(performance.now() - sent), () => {});
    return reply;
  }

  /** Jobs the next take asks for at most: the largest until runs and calls were timed. */
  get size(): number {
    if (this.runMs === 0 || this.callMs === 0) return this.max;
    const freedPerCall = (this.concurrency * this.callMs) / this.runMs;
    return Math.max(1, Math.min(this.max, Math.round(freedPerCall)));
  }
}
