/**
 * The executor's take side: the loop that takes jobs fairly for the free slots, shard by shard in
 * turn. It blocks on each dry shard's wake-up marker while idle (no polling), and wakes by itself
 * at the next due time (a retry, a delayed job, a group's rate window) and on a slow fallback
 * timer. Finish calls carry takes too (finish-and-take): it plans and follows those as well.
 */
import type { Redis } from 'ioredis';
import type { Job } from '../queue/job.js';
import { type ConnectionOption, connect } from '../redis/connection.js';
import type { Finished as FinishReply, FinishSettings, QueueStore, Taken } from '../redis/queue-store.js';
import { setShard } from './job-shard.js';
import { ShardTurns } from './shard-turns.js';
import { TakePlan } from './take-plan.js';
import { TakeSizer } from './take-size.js';

/**
 * How long a take may go unanswered before its slots are free for other shards' takes: far past
 * any answer of a working Redis (a take holds it for well under 10 ms), short against a failover.
 * At 1 s, the takes a dead Cluster primary held stopped the healthy shards for a 500 ms stretch
 * of no starts in every run of benchmarks/probes/cluster-outage.ts; at 250 ms none was below
 * two thirds of the rate before.
 */
const LATE_TAKE_MS = 250;

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the take loop needs of the delivery side. */
export interface Outcomes {
  /** Outcomes wait for a finish call (which takes for the slots their runs freed). */
  readonly waiting: boolean;
  /** Outcomes wait for a finish call, or for its answer. */
  readonly busy: boolean;
  /** Resolves once the outcomes waiting now are sent and answered. */
  drain(): Promise<void>;
  /** Hands jobs taken but never started back to the queue, without counting a retry. */
  release(jobs: Job[]): void;
}

export interface TakerDeps {
  /** Each shard's script calls, by shard number. */
  stores: QueueStore[];
  /** Where the blocking connections go (one per shard). */
  connection: ConnectionOption;
  /** What every take asks for besides its size. */
  settings: FinishSettings;
  concurrency: number;
  fallbackWakeMs: number;
  /** The server's time now (ms), as the executor estimates it: the queue's due times are the server's. */
  serverNow?: () => number;
  outcomes: Outcomes;
  /** Runs in progress (each holds a slot). */
  running(): number;
  /** Starts a taken job's run. */
  start(job: Job): void;
  onError(err: unknown): void;
}

export class Taker {
  /** Which shard the next take goes to. */
  private readonly turns: ShardTurns;
  private readonly sizer: TakeSizer;
  /** When to take and how many (take-plan.ts). */
  private readonly plan: TakePlan;
  /** One connection per shard, blocked on the shard's wake-up marker while the executor sleeps. */
  readonly blocking: Redis[];
  /** Each shard's blocking call in flight (it outlives the sleep that made it: see waitForWork). */
  private readonly watches: Array<Promise<void> | null>;
  /** Ends the sleep in progress (a shard's marker fired, close()). */
  private sleepWake: (() => void) | null = null;
  private waiting = false;
  private slotWaiter: (() => void) | null = null;
  /** Wakes the loop when the pace allows the next take. */
  private paceTimer: NodeJS.Timeout | null = null;
  private closing = false;
  /**
   * When the loop last began an iteration (performance.now() ms); an idle loop still iterates
   * once per fallback period at least (its sleep is bounded). Liveness (health.ts) reads it.
   */
  lastProgress = performance.now();
  /** The loop waits on runs or on outcomes being sent (handlers running long, Redis down): not a stall. */
  private onRuns = false;
  /** The loop runs (start-up passed): a stall counts only then. */
  private looping = false;

  constructor(private readonly d: TakerDeps) {
    this.sizer = new TakeSizer(d.concurrency);
    this.plan = new TakePlan({
      concurrency: d.concurrency,
      sizer: this.sizer,
      fallbackWakeMs: d.fallbackWakeMs,
      wakeIn: (ms) => this.wakeIn(ms),
      clock: { now: () => performance.now(), wall: d.serverNow ?? Date.now },
    });
    this.turns = new ShardTurns(d.stores.length, d.serverNow);
    this.blocking = d.stores.map(() => connect(d.connection, { blocking: true }).client);
    this.watches = d.stores.map(() => null);
  }

  /**
   * Most jobs the next take asks for: what frees up while one call to Redis travels (slots ×
   * round trip ÷ run time, from running means of this executor's own), at most half the slots
   * (rounded up).
   */
  get size(): number {
    return this.sizer.size;
  }

  /** A run ended after `ms` of running: the take size follows how long runs take. */
  ranFor(ms: number): void {
    this.sizer.ranFor(ms);
  }

  /** Takes until close(); then waits for the takes in flight, whose jobs are released as they come. */
  async loop(): Promise<void> {
    this.looping = true;
    while (!this.closing) {
      this.lastProgress = performance.now();
      const want = this.plan.forLoop(this.d.running(), this.d.outcomes.waiting);
      if (want > 0) {
        const shard = this.turns.next();
        this.trackTake(shard, want, this.take(shard, want), false);
        continue;
      }
      switch (this.plan.idle(this.d.outcomes.busy)) {
        case 'back-off':
          await delay(this.plan.backOff());
          this.plan.backedOff();
          break;
        case 'finishes':
          // Their answers take for the slots their runs free, and come before a wake-up would.
          this.onRuns = true;
          await this.d.outcomes.drain();
          this.onRuns = false;
          break;
        case 'sleep':
          await this.waitForWork(this.plan.sleepMs());
          this.plan.woken();
          break;
        case 'wait':
          // for a take to answer or a slot to free up (each wakes the loop)
          // (a take in flight answers, or with shards is given up within LATE_TAKE_MS: a loop that
          // waits on one longer than the stall limit is not live; slots held by runs may take any time)
          this.onRuns = this.plan.inFlight === 0;
          await this.wakeUp();
          this.onRuns = false;
      }
    }
    while (this.plan.inFlight > 0) await this.wakeUp();
  }

  /**
   * Whether the loop has stalled: no progress for `stallMs` while it should be running (it
   * started, is not closing, and does not wait on runs or on outcomes being sent).
   */
  stalled(stallMs: number, now = performance.now()): { stalled: boolean; sinceMs: number } {
    const sinceMs = Math.max(0, now - this.lastProgress);
    return { stalled: this.looping && !this.closing && !this.onRuns && sinceMs >= stallMs, sinceMs };
  }

  /** Stops the loop: no take is sent after this; the sleep and the waits in progress end. */
  close(): void {
    this.closing = true;
    this.plan.close();
    if (this.paceTimer) clearTimeout(this.paceTimer);
    this.wakeLoop();
    this.sleepWake?.();
  }

  disconnect(): void {
    for (const b of this.blocking) b.disconnect();
  }

  /** Jobs were passed on to the executors that have their task: the loop leaves them the due times for a while. */
  passedOn(): void {
    this.plan.passedOn();
  }

  /** Wakes the loop: a take answered, a slot freed, outcomes were sent. */
  wakeLoop(): void {
    const w = this.slotWaiter;
    this.slotWaiter = null;
    w?.();
  }

  /**
   * The server's clock jumped: a sleep until a due time was measured on the old time, so the
   * loop wakes and takes again (its take answers the due time, and the sleep is set anew).
   */
  clockJumped(): void {
    this.turns.wakeAll();
    this.sleepWake?.();
  }

  /**
   * The take that a round of finish calls (one per shard in `shards`) carries for the slots their
   * runs free: `want` jobs from `shard`. When the shard next in turn has no finish call in the
   * round, it gets a take of its own, and none is carried (`want` 0).
   */
  forFinishes(shards: number[]): { shard: number; want: number } {
    const want = this.plan.forFinish(this.d.running());
    if (want <= 0) return { shard: -1, want: 0 };
    // (every shard dry: the take rides on a finish call all the same, and costs no call of its own)
    const shard = this.turns.allDry ? shards[0] : this.turns.next();
    if (shards.includes(shard)) return { shard, want };
    this.trackTake(shard, want, this.take(shard, want), true);
    return { shard: -1, want: 0 };
  }

  /** Times finish call `reply` (a round trip), and follows the take of `want` jobs from `shard` it carries. */
  carry(shard: number, want: number, reply: Promise<FinishReply>): Promise<FinishReply> {
    const timed = this.sizer.timed(reply);
    if (want > 0) this.trackTake(shard, want, timed, true);
    return timed;
  }

  /** Resolves at the loop's next wake-up (a take answered, a slot freed, the pace allows more, close()). */
  private wakeUp(): Promise<void> {
    return new Promise<void>((resolve) => (this.slotWaiter = resolve));
  }

  /** Wakes the loop in `ms` (at least 1), unless a wake-up is set already: the pace allows the free slots' jobs then. */
  private wakeIn(ms: number): void {
    if (this.paceTimer) return;
    this.paceTimer = setTimeout(
      () => {
        this.paceTimer = null;
        this.wakeLoop();
      },
      Math.max(1, Math.ceil(ms)),
    );
  }

  /** Follows a take of `want` jobs from shard `shard`: starts the jobs it brings, and tells the plan what it found. */
  private trackTake(shard: number, want: number, reply: Promise<Taken>, quiet: boolean): void {
    const ticket = this.plan.sent(want);
    const shardTicket = this.turns.ticket(shard);
    this.turns.sent(shard);
    // A take its shard does not answer (its primary failing over) stops holding slots after a
    // while, so that the other shards' jobs go on meanwhile; what it brings late gets the slots
    // free then, and the rest is released. With one shard there is no other to serve: the take
    // holds its slots until it is answered (else a take answered late on a loaded server handed
    // back, as `waiting` again, jobs that finish calls' takes had found room for meanwhile).
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      this.plan.settled(want);
      this.wakeLoop();
    };
    const late = this.d.stores.length > 1 ? setTimeout(settle, LATE_TAKE_MS) : undefined;
    void reply
      .then(
        ({ jobs, nextDue: due }) => {
          for (const job of jobs) setShard(job, shard);
          if (this.closing) {
            // Taken while close() began: hand them back untouched.
            this.d.outcomes.release(jobs);
            return;
          }
          if (settled) {
            const room = Math.max(0, this.d.concurrency - this.d.running() - this.plan.reservedSlots);
            this.d.outcomes.release(jobs.splice(room));
          }
          for (const job of jobs) this.d.start(job);
          const exhausted = this.turns.answered(shard, want, jobs.length, due, shardTicket);
          if (this.turns.isDry(shard)) this.watches[shard] ??= this.watch(shard);
          this.plan.answered(want, jobs.length, this.turns.nextDue(), ticket, exhausted);
        },
        (err: unknown) => {
          if (this.closing) return;
          if (!quiet) this.d.onError(err);
          this.plan.failedTake();
        },
      )
      .finally(() => {
        clearTimeout(late);
        this.turns.settled(shard);
        settle();
      });
  }

  private take(shard: number, n: number): Promise<Taken> {
    return this.sizer.timed(this.d.stores[shard].take(n, this.d.settings));
  }

  /**
   * Sleeps until a shard's wake-up marker fires, or for at most `ms` (a shorter sleep ends at a
   * due time: a retry, a delayed job, a group's rate window; the shard it is in wakes then). The
   * executor watches each shard's marker from the moment the shard runs dry (see watch), so the
   * sleep only waits on those watches: an idle executor sends one blocking call per shard per
   * fallback period.
   */
  private async waitForWork(ms: number): Promise<void> {
    this.waiting = true;
    let timer: NodeJS.Timeout | undefined;
    let fallback = false;
    try {
      await new Promise<void>((resolve) => {
        this.sleepWake = resolve;
        for (let i = 0; i < this.d.stores.length; i++) this.watches[i] ??= this.watch(i);
        timer = setTimeout(() => {
          fallback = ms >= this.d.fallbackWakeMs;
          resolve();
        }, ms);
      });
    } finally {
      clearTimeout(timer);
      this.sleepWake = null;
      this.waiting = false;
    }
    if (fallback) this.turns.wakeAll();
  }

  /**
   * Watches dry shard `i`'s wake-up marker (a blocking call on its own connection, renewed each
   * fallback period) until it fires, so that a shard that gets work is taken from again while
   * the other shards keep the executor busy. A wake-up ends the executor's sleep, or has the
   * loop take when slots are free; when none is, it is passed on (the marker set again) for an
   * executor that has some.
   */
  private async watch(i: number): Promise<void> {
    const store = this.d.stores[i];
    try {
      while (!this.closing && this.turns.isDry(i)) {
        const woken = await store.waitForWake(this.blocking[i], this.d.fallbackWakeMs);
        if (!woken || this.closing) continue;
        this.turns.wake(i, true);
        if (this.waiting) this.sleepWake?.();
        else if (this.d.running() >= this.d.concurrency) await store.wake();
        else {
          this.plan.woken();
          this.wakeLoop();
        }
      }
    } catch (err) {
      if (!this.closing) {
        this.d.onError(err);
        await delay(200);
        this.turns.wake(i);
        this.sleepWake?.();
      }
    } finally {
      this.watches[i] = null;
    }
  }
}
