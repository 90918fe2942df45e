/**
 * When an executor takes jobs and how many. The rule:
 *
 * Take for the free slots, one full take at most per call; the loop takes when no take is in
 * flight, or one more full take while fewer than two are, and leaves the taking to finish calls
 * while finished runs wait to be sent or since a take found the queue dry (until the loop's next
 * wake-up); after a failed take nothing is taken until its backoff has passed; under a backlog of
 * long jobs the takes are held to the pace.
 *
 * Why: a full take is what frees up while one call travels (take-size.ts), so slots free up in
 * staggered waves rather than all at once, and a new group's job waits for a wave, not a batch.
 * Two full takes in flight let Redis work on one while the other's answer travels and its jobs
 * start. A finish call is sent anyway: it takes for every slot free, up to a full take, even
 * while the queue is dry, and its answer comes before a wake-up would (under steady arrivals it
 * brings the next jobs: one call a cycle, instead of a finish, a wait for the wake-up and a
 * take). The pace (take-size.ts) keeps a backlog's starts from bunching into waves; when it
 * holds a take back, the loop is woken when the pace allows the rest.
 *
 * The plan decides; the executor issues the calls, starts the runs and wakes its loop. Every
 * method runs once a take or once a loop turn, never once a job.
 */
import { MAX_TAKES_IN_FLIGHT, type TakeSizer } from './take-size.js';

/**
 * What the loop does when it takes nothing now: `wait` for a take to answer or a slot to free up
 * (each wakes it); `back-off` after a failed take ({@link TakePlan.backOff}); `finishes`: wait
 * for the finish calls waiting or in flight (they take for the slots they free); `sleep` until
 * the queue's wake-up marker or {@link TakePlan.sleepMs}.
 */
export type Idle = 'wait' | 'back-off' | 'finishes' | 'sleep';

/** The plan's two clocks, in ms. */
export interface PlanClock {
  /** Monotonic time (performance.now()), for the pace. */
  now(): number;
  /** Wall-clock time (Date.now()), for the queue's due times. */
  wall(): number;
}

const systemClock: PlanClock = { now: () => performance.now(), wall: () => Date.now() };

/** First wait after a failed take; it doubles with each failure in a row, up to BACKOFF_MAX_MS. */
const BACKOFF_MS = 100;
const BACKOFF_MAX_MS = 2000;
/** Shortest sleep while the queue is dry (a stuck job due now or past). */
const MIN_SLEEP_MS = 5;
/**
 * After it passed jobs on (a task it has no handler for), the executor wakes for due times this
 * much late, for PASSED_WINDOW_MS (longer than the longest pass delay, includes/unhandled.lua):
 * so that an executor with the task, woken at the due time, takes the job first.
 */
const PASSED_LATE_MS = 100;
const PASSED_WINDOW_MS = 5000;

export interface TakePlanOptions {
  /** The executor's slots. */
  concurrency: number;
  /** Sizes the takes and keeps the pace (its timings are the executor's). */
  sizer: TakeSizer;
  /** Longest sleep while the queue is dry. */
  fallbackWakeMs: number;
  /** Wakes the loop in `ms`, unless a wake-up is set already: the pace allows the jobs held back then. */
  wakeIn: (ms: number) => void;
  clock?: PlanClock;
}

/** The executor's take decision and the state it rests on (see the rule above). */
export class TakePlan {
  private readonly concurrency: number;
  private readonly sizer: TakeSizer;
  private readonly fallbackWakeMs: number;
  private readonly wakeIn: (ms: number) => void;
  private readonly clock: PlanClock;
  /** Slots the takes in flight asked for. */
  private reserved = 0;
  /** Takes in flight: the loop's own, and those riding on finish calls. */
  private takes = 0;
  private closed = false;
  /** The last take failed: nothing is taken until backedOff(). */
  private failed = false;
  /** Failed takes in a row. */
  private failures = 0;
  /** The last take came back full: jobs wait for slots, and their starts are paced. */
  private backlog = false;
  /** A take found less than it asked for: the queue ran dry (until `nextDue` for stuck jobs). */
  private dry = false;
  private nextDue = -1;
  /** Until when (wall-clock ms) due times are woken for PASSED_LATE_MS late (see passedOn). */
  private passedUntil = 0;
  /** Counts the loop's sleeps: a take sent before a wake-up cannot mark the queue dry after it. */
  private wakeUps = 0;

  constructor(opts: TakePlanOptions) {
    this.concurrency = opts.concurrency;
    this.sizer = opts.sizer;
    this.fallbackWakeMs = opts.fallbackWakeMs;
    this.wakeIn = opts.wakeIn;
    this.clock = opts.clock ?? systemClock;
  }

  /**
   * Jobs the loop takes now (0: none, see {@link idle}). `running`: runs that hold a slot;
   * `finishWaiting`: finished runs wait to be sent (their finish call takes for their slots).
   */
  forLoop(running: number, finishWaiting: boolean): number {
    if (this.dry || finishWaiting) return 0;
    return this.want(running, false);
  }

  /** Jobs a finish call about to be sent takes (0: none). */
  forFinish(running: number): number {
    return this.want(running, true);
  }

  private want(running: number, piggyback: boolean): number {
    if (this.closed || this.failed) return 0;
    const full = this.sizer.size;
    let want = Math.min(this.concurrency - running - this.reserved, full);
    if (want > 0 && this.pacing) {
      const now = this.clock.now();
      const allowed = Math.floor(this.sizer.allowed(now));
      if (allowed < want) {
        this.wakeIn(this.sizer.msUntil(want, now));
        want = allowed;
      }
    }
    if (want <= 0) return 0;
    return piggyback || this.takes === 0 || (want === full && this.takes < MAX_TAKES_IN_FLIGHT) ? want : 0;
  }

  /** Whether takes follow the pace now: the last take came back full, and runs take long against a call. */
  private get pacing(): boolean {
    return this.backlog && this.sizer.paces;
  }

  /** A take of `n` jobs was sent. Returns its ticket, for {@link answered}. */
  sent(n: number): number {
    this.reserved += n;
    this.takes += 1;
    if (this.pacing) this.sizer.paced(n, this.clock.now());
    return this.wakeUps;
  }

  /**
   * The take of `n` jobs with `ticket` brought `got` jobs (their runs started), and the queue's
   * next due time (a retry, a delayed job, a group's rate window) is `due` (wall-clock ms; 0 or
   * less: none). `exhausted`: no shard of the queue has work left (a sharded queue's take that
   * came back short dried only its own shard; see shard-turns.ts).
   */
  answered(n: number, got: number, due: number, ticket: number, exhausted = got < n): void {
    this.failures = 0;
    this.backlog = got === n;
    if (got < n && exhausted && ticket === this.wakeUps) {
      this.dry = true;
      this.nextDue = due;
    } else if (got === n) {
      // a full take (a finish call's, made while the queue was dry): work is back
      this.dry = false;
    }
  }

  /** The take failed. */
  failedTake(): void {
    this.failed = true;
  }

  /** The take of `n` jobs is over (answered or failed): its slots are no longer reserved. */
  settled(n: number): void {
    this.reserved -= n;
    this.takes -= 1;
  }

  /** Slots the takes in flight asked for. */
  get reservedSlots(): number {
    return this.reserved;
  }

  /** Takes in flight. */
  get inFlight(): number {
    return this.takes;
  }

  /** What the loop does when {@link forLoop} gives nothing (`finishesBusy`: finish calls wait or are in flight). */
  idle(finishesBusy: boolean): Idle {
    if (this.takes > 0) return 'wait';
    if (this.failed) return 'back-off';
    if (this.dry) return finishesBusy ? 'finishes' : 'sleep';
    return 'wait';
  }

  /** Ms to wait after a failed take: 100, doubling with each failure in a row, 2,000 at most. */
  backOff(): number {
    return Math.min(BACKOFF_MS * 2 ** this.failures++, BACKOFF_MAX_MS);
  }

  /** The wait after a failed take is over: take again. */
  backedOff(): void {
    this.failed = false;
  }

  /** Ms to sleep on the wake-up marker at most: until the next due time, within [5 ms, fallbackWakeMs]. */
  sleepMs(): number {
    this.dry = false;
    const wall = this.clock.wall();
    let untilDue = this.nextDue > 0 ? this.nextDue - wall : Infinity;
    if (wall < this.passedUntil) untilDue += PASSED_LATE_MS;
    return Math.max(MIN_SLEEP_MS, Math.min(this.fallbackWakeMs, untilDue));
  }

  /** The executor passed jobs on to others (a task it has no handler for): it leaves them the due times for a while. */
  passedOn(): void {
    this.passedUntil = this.clock.wall() + PASSED_WINDOW_MS;
  }

  /** The loop woke from its sleep: what takes found before (or while) it slept says nothing about the work now. */
  woken(): void {
    this.wakeUps += 1;
    this.dry = false;
  }

  /** Nothing more is taken (the executor is closing). */
  close(): void {
    this.closed = true;
  }
}
