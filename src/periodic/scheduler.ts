/**
 * A periodic scheduler replica. Any number may run against one queue; each occurrence of each
 * task is submitted exactly once.
 *
 * How a replica works:
 * 1. It claims due tasks in batches with one script (`periodic-claim`): tasks whose p:nextrun
 *    score is within the look-ahead get their score moved to now + claim TTL. The new score is
 *    the claim's token; a replica that dies holding claims blocks nothing, since the tasks come
 *    due again at the TTL. Claims split the work among replicas (each task is claimed by one).
 * 2. It computes each claimed task's occurrences and next occurrence in JavaScript (calendar and
 *    cron timers cannot run in Lua), applying the catch-up policy.
 * 3. Right away it commits them with one script (`periodic-stage`) that, per task, checks the
 *    token (compare-and-set), stages a job per occurrence as `<task id>@<occurrence ms>` in state
 *    `planned` (invisible to readers; the id means an occurrence can never be submitted twice),
 *    records the run history and advances nextrun, atomically.
 * 4. At the occurrence, `periodic-release` submits the staged jobs that are due, applying each
 *    task's overlap policy against its last job at that moment. Any replica releases any staged
 *    occurrence (each is released once): the one that staged it at the occurrence, and the others
 *    as soon as they learn of it, so a replica that dies after staging delays nothing.
 * 5. Idle, it sleeps until the earliest score minus the look-ahead (one ZRANGE inside the claim
 *    script tells it), or until `p:wake` is published (upsert, enable, trigger, emit), or at the
 *    latest after `fallbackWakeMs`. It never scans every task.
 */

import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { TimerStalledError } from '../errors.js';
import { connect } from '../redis/connection.js';
import type { PeriodicKeys } from '../redis/keys.js';
import { checkQueueName } from '../redis/keys.js';
import { checkLibrary } from '../redis/library.js';
import { PeriodicStore, type StageRecord } from '../redis/periodic-store.js';
import { QueueStore } from '../redis/queue-store.js';
import { type ClockJump, ServerClock } from '../redis/server-clock.js';
import { checkShards, homeShard } from '../redis/shards.js';
import type { Timer } from '../timers/index.js';
import { type Health, LagMonitor, STALL_AFTER_MS } from '../util/health.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../util/long-timer.js';
import { applyBounds } from './bounds.js';
import { type Claimed, claimed, shiftedTimer, stageRecord } from './claimed.js';
import { checkTimer } from './definition.js';
import { type Plan, plan } from './occurrences.js';
import { replicaHealth } from './replica-health.js';
import { Lateness, ReplicaBeat } from './replicas.js';
import { excludesOf } from './schedule.js';

import {
  type OccurrenceCount,
  type OccurrenceOutcome,
  type SchedulerEvents,
  type SchedulerOptions,
  schedulerSettings,
} from './scheduler-options.js';

export type {
  FiredInfo,
  KeepRuns,
  OccurrenceCount,
  OccurrenceOutcome,
  SchedulerEvents,
  SchedulerOptions,
} from './scheduler-options.js';

/** The outcomes periodic-release answers by code. */
const RELEASE_OUTCOMES: Record<string, OccurrenceOutcome> = { s: 'submitted', k: 'skipped', m: 'missed' };

/** A claim pass's clock: now, and when the schedulers' current unbroken run of claims and releases began (both ms). */
interface ClaimPass {
  now: number;
  since: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setLongTimeout(r, ms));
/** Planning gives the event loop a turn at least this often (ms), so a slow timer blocks nothing for long. */
const PLAN_SLICE_MS = 10;
const yieldTurn = () => new Promise<void>((r) => setImmediate(r));

/**
 * Test hook: wraps the timers a scheduler builds (a test makes one misbehave). Internal: not
 * exported from the package.
 */
export const timerHook: { wrap: ((timer: Timer, spec: string) => Timer) | null } = { wrap: null };

/**
 * One scheduler replica of queue `queueName`.
 * @example
 * ```ts
 * const scheduler = new Scheduler('mail', { connection: 'redis://127.0.0.1:6379' });
 * await scheduler.start();
 * // ...
 * await scheduler.close();
 * ```
 */
export class Scheduler extends EventEmitter<SchedulerEvents> {
  readonly id: string;
  readonly keys: PeriodicKeys;
  private readonly client: Redis;
  /** The periodic and queue script calls, on `client`. */
  private readonly store: PeriodicStore;
  private readonly subscriber: Redis;
  private readonly injected?: () => number;
  private readonly o: Required<Omit<SchedulerOptions, 'connection' | 'id' | 'now' | 'keepRuns' | 'shards'>> & {
    keepCount: number;
    keepAge: number;
  };
  /** The server's clock, timed on this process's monotonic clock: its jumps are noticed (../redis/server-clock.ts). */
  private readonly clock = new ServerClock((jump) => this.clockJumped(jump));
  private closing = false;
  private loopDone: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private woken = false;
  /** Scheduler-clock time the idle loop sleeps until (0 while it is not sleeping). */
  private releaseTimer: { at: number; timer: LongTimer } | null = null;
  /** The earliest staged occurrence the last reply told of (scheduler clock), or null. */
  private stagedAt: number | null = null;
  private releasing = false;
  private releaseAgain = false;
  private readonly inflight = new Set<Promise<void>>();
  private readonly timerCache = new Map<string, Timer>();
  /** This replica's entry among the live replicas (see ./replicas.ts). */
  private readonly beat: ReplicaBeat;
  /** The start-up passed: the schema matched and the library loaded. */
  private up = false;
  private readonly lag = new LagMonitor();
  /** When the loop last began a pass or woke (performance.now() ms); liveness reads it. */
  private lastProgress = performance.now();
  /** The loop waits on Redis (a claim or a commit in flight): an outage, not a stall. */
  private onRedis = false;
  /** What the replica's record shows (./replicas.ts): claims held now, claimed and released since start, lateness. */
  private readonly counts = { claims: 0, claimed: 0, released: 0 };
  private readonly lateness = new Lateness();

  /**
   * @throws {@link ValidationError} naming the first bad option or the queue name; nothing is opened then.
   */
  constructor(queueName: string, schedulerOptions: SchedulerOptions) {
    super();
    checkQueueName(queueName);
    const options = schedulerSettings(schedulerOptions);
    const shards = checkShards(options.shards);
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.injected = options.now;
    this.o = {
      lookaheadMs: options.lookaheadMs,
      claimTtlMs: options.claimTtlMs,
      batchSize: options.batchSize,
      misfireGraceMs: options.misfireGraceMs,
      fallbackWakeMs: options.fallbackWakeMs,
      bufferPollMs: options.bufferPollMs,
      maxEvents: options.maxEvents,
      keepCount: options.keepRuns.count,
      keepAge: options.keepRuns.age,
    };
    this.client = connect(options.connection, { blocking: true }).client;
    // (the home shard: a run is staged in one atomic call beside its task)
    this.store = new PeriodicStore(
      new QueueStore(this.client, queueName, { maxEvents: this.o.maxEvents, shard: homeShard(shards), shards }),
    );
    this.keys = this.store.keys;
    this.subscriber = connect(options.connection, { blocking: true, subscriber: true }).client;
    this.beat = new ReplicaBeat(this.store, this.id, () => ({ ...this.counts }), this.lateness);
  }

  /** The scheduler's clock: the injected one, or the Redis server's time as estimated here. */
  now(): number {
    return this.injected ? this.injected() : this.clock.now();
  }

  /**
   * Starts the replica; resolves once it listens for wake-ups and runs its loop. When it cannot
   * start (Redis refused its credentials or the function library), it rejects and closes its
   * connections: start a new Scheduler to try again.
   */
  async start(): Promise<void> {
    if (this.loopDone) return;
    try {
      await this.store.queue.ready();
      await checkLibrary(this.client);
      this.subscriber.on('message', () => this.wake());
      await this.store.subscribeWake(this.subscriber);
      await this.beat.start();
      this.up = true;
      this.lag.start();
    } catch (err) {
      // A start that failed leaves nothing behind: no connection keeps reconnecting.
      this.destroy();
      throw err;
    }
    this.loopDone = this.loop();
  }

  /**
   * Readiness and liveness, for a probe (`rota scheduler --health-port`, or an app's own server);
   * it sends no Redis command. Ready: started (schema matched, library loaded), its connections
   * ready, its replica heartbeat answered (within two renewals, none unanswered for 2 s; renewed
   * every 5 s) and not closing. Live: its loop began a pass within 2 minutes (or 3 fallback
   * periods) unless it waits on Redis, and the event loop lags less than 10 s.
   */
  health(): Health {
    return replicaHealth({
      started: this.up,
      connections: [this.client, this.subscriber],
      heartbeat: this.beat.answers,
      closing: this.closing,
      stallMs: Math.max(STALL_AFTER_MS, 3 * this.o.fallbackWakeMs),
      lastProgress: this.lastProgress,
      onRedis: this.onRedis,
      lag: this.lag,
    });
  }

  /** Makes the replica look for due tasks at once (what `p:wake` messages do). */
  wake(): void {
    this.woken = true;
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  /**
   * The server's clock jumped: the sleeps measured on the old time are set anew (the loop claims
   * again, the release timer is armed on the new time), and the jump is an event.
   */
  private clockJumped(jump: ClockJump): void {
    const release = this.releaseTimer;
    if (release) {
      clearLongTimeout(release.timer);
      this.releaseTimer = null;
      this.planRelease(release.at);
    }
    this.wake();
    this.emit('clockJump', jump);
  }

  private emitError(err: unknown): void {
    if (this.closing && err instanceof Error && /Connection is closed/.test(err.message)) return;
    if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(String(err)));
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.closing) {
      this.lastProgress = performance.now();
      this.woken = false;
      let claimed: Claimed[];
      let earliest: number | null;
      let pass: ClaimPass;
      let walking: boolean;
      try {
        this.onRedis = true;
        ({ earliest, claimed, walking, ...pass } = await this.claim());
        failures = 0;
      } catch (err) {
        if (this.closing) break;
        this.onRedis = false;
        this.emitError(err);
        await sleep(Math.min(100 * 2 ** failures++, 2000));
        continue;
      }
      if (claimed.length) {
        this.counts.claims = claimed.length;
        this.counts.claimed += claimed.length;
        try {
          earliest = (await this.commit(claimed, pass)) ?? earliest;
        } catch (err) {
          // The claims expire and another pass (or replica) commits these tasks.
          this.emitError(err);
        } finally {
          this.counts.claims = 0;
        }
      }
      this.onRedis = false;
      // (walking: interval tasks are being moved back after a backward jump, a step a claim)
      if (claimed.length >= this.o.batchSize || this.woken || walking) continue;
      const wait = Math.max(
        1,
        Math.min(this.o.fallbackWakeMs, earliest === null ? this.o.fallbackWakeMs : earliest - this.o.lookaheadMs - this.now()),
      );
      await this.idle(wait);
    }
  }

  private idle(ms: number): Promise<void> {
    if (this.closing || this.woken) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const t = setLongTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearLongTimeout(t);
        resolve();
      };
    });
  }

  /**
   * Claims due tasks; resolves the scheduler-clock now and since when the claims ran unbroken
   * (the pass), the earliest nextrun left, the claimed tasks, and whether interval tasks are
   * still being moved back after a backward clock jump.
   */
  private async claim(): Promise<ClaimPass & { earliest: number | null; claimed: Claimed[]; walking: boolean }> {
    const sent = performance.now();
    const claim = await this.store.claim({
      lookaheadMs: this.o.lookaheadMs,
      max: this.o.batchSize,
      claimTtlMs: this.o.claimTtlMs,
      now: this.injected ? Math.round(this.injected()) : undefined,
      keepCount: this.o.keepCount,
      keepAgeMs: this.o.keepAge,
      misfireGraceMs: this.o.misfireGraceMs,
    });
    if (!this.injected) this.clock.observe(claim.now, sent, performance.now());
    this.planRelease(claim.staged);
    return {
      now: claim.now,
      since: claim.since,
      earliest: claim.earliest,
      claimed: claim.tasks.map((t) => claimed(t, claim.epoch)),
      walking: claim.walking,
    };
  }

  private timerOf(spec: string, timezone: string): Timer {
    const key = `${timezone}\u0000${spec}`;
    let t = this.timerCache.get(key);
    if (!t) {
      t = checkTimer(spec, timezone || undefined);
      if (timerHook.wrap) t = timerHook.wrap(t, spec);
      if (this.timerCache.size > 10_000) this.timerCache.clear();
      this.timerCache.set(key, t);
    }
    return t;
  }

  /**
   * Computes the claimed tasks' plans and commits them (stages their occurrences, advances their
   * nextrun). Resolves the earliest nextrun afterwards.
   */
  private async commit(claimed: Claimed[], { now, since }: ClaimPass): Promise<number | null> {
    const records: StageRecord[] = [];
    // per record: its job task, and its occurrences missed and excluded
    const settled: Array<{ task: string; missed: number; excluded: number }> = [];
    let slice = performance.now();
    for (const c of claimed) {
      if (performance.now() - slice > PLAN_SLICE_MS) {
        await yieldTurn();
        // Closing: leave the rest (their claims expire and any replica plans them).
        if (this.closing) break;
        slice = performance.now();
      }
      let p: Plan;
      let failure = '';
      let timer: Timer | null = null;
      try {
        timer = shiftedTimer(this.timerOf(c.timer, c.timezone), c.gridShift);
        p =
          c.nextrun === null
            ? { occurrences: [], nextrun: null, period: 0, missed: null }
            : plan({
                id: c.id,
                timer,
                nextrun: c.nextrun,
                now,
                since,
                catchup: c.catchup,
                catchupWindow: c.catchupWindow,
                misfireGraceMs: this.o.misfireGraceMs,
                excludes: excludesOf(timer),
              });
        if (!c.enabled || (c.nextrun !== null && c.nextrun > now + this.o.lookaheadMs)) {
          // Claimed only for a trigger (a disabled task runs nothing else).
          p = { occurrences: [], nextrun: c.nextrun, period: 0, missed: null };
        }
      } catch (err) {
        if (!(err instanceof TimerStalledError)) {
          this.emitError(new Error(`periodic task ${c.id}: ${(err as Error).message}`));
          continue;
        }
        // A timer that does not advance would stall every claim of this task: disable the task.
        this.emitError(err);
        failure = err.message;
        p = { occurrences: [], nextrun: null, period: 0, missed: { count: 0, first: err.occurrence, last: err.occurrence } };
      }
      if (c.triggered !== null && !failure) {
        if (c.nextrun !== null && c.nextrun > now && p.occurrences[0] === c.nextrun) {
          // A trigger while its next occurrence is claimed ahead: serve the trigger now, the occurrence later.
          p = { occurrences: [], nextrun: c.nextrun, period: p.period, missed: null };
        }
        p.occurrences = [...new Set([...p.occurrences, c.triggered])].sort((a, b) => a - b);
      }
      const bounded =
        timer && !failure ? applyBounds(c.id, timer, p, c.triggered, c.runs) : { plan: p, excluded: [], dues: [], runs: c.runs };
      records.push(stageRecord(c, bounded, failure));
      settled.push({ task: c.raw.task, missed: p.missed?.count ?? 0, excluded: bounded.excluded.length });
    }
    if (records.length === 0) return null;
    const { earliest, staged, committed } = await this.store.stage(records);
    const lost = committed.filter((ok) => !ok).length;
    if (lost) this.emit('fired', { submitted: 0, skipped: 0, lost });
    if (this.listenerCount('occurrences') > 0) {
      const counts: OccurrenceCount[] = [];
      settled.forEach((r, i) => {
        if (!committed[i]) return;
        if (r.missed > 0) counts.push({ task: r.task, outcome: 'missed', count: r.missed });
        if (r.excluded > 0) counts.push({ task: r.task, outcome: 'excluded', count: r.excluded });
      });
      if (counts.length > 0) this.emit('occurrences', counts);
    }
    this.planRelease(staged);
    return earliest;
  }

  /** Makes sure a release runs at `at` (scheduler clock) or earlier. */
  private planRelease(at: number | null): void {
    this.stagedAt = at;
    if (at === null || this.closing) return;
    if (this.releaseTimer && this.releaseTimer.at <= at) return;
    if (this.releaseTimer) clearLongTimeout(this.releaseTimer.timer);
    const timer = setLongTimeout(
      () => {
        this.releaseTimer = null;
        this.track(this.release(at));
      },
      Math.max(0, at - this.now()),
    );
    this.releaseTimer = { at, timer };
  }

  private track(p: Promise<void>): void {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p));
  }

  /**
   * Releases every staged occurrence that is due, then plans the next release. `due`: when the
   * earliest of them was due (scheduler clock), if known; the lateness of a release that submits
   * or skips something is measured from it.
   */
  private async release(due?: number | null): Promise<void> {
    if (this.releasing) {
      this.releaseAgain = true;
      return;
    }
    this.releasing = true;
    try {
      for (;;) {
        this.releaseAgain = false;
        let released: Awaited<ReturnType<PeriodicStore['release']>>;
        try {
          released = await this.store.release({
            now: this.injected ? Math.round(this.injected()) : undefined,
            max: this.o.batchSize,
            bufferPollMs: this.o.bufferPollMs,
            misfireGraceMs: this.o.misfireGraceMs,
            keepAgeMs: this.o.keepAge,
          });
        } catch (err) {
          // Staged occurrences stay staged: the next release (here or in any replica) takes them.
          this.emitError(err);
          if (!this.closing) this.planRelease(this.now() + 1000);
          return;
        }
        const { submitted, skipped } = released;
        this.counts.released += submitted;
        if ((submitted || skipped) && typeof due === 'number') this.lateness.observe(this.now() - due);
        due = released.earliest;
        for (const id of released.cancels) {
          try {
            await this.store.queue.cancel(id);
          } catch (err) {
            this.emitError(err);
          }
        }
        if (submitted || skipped) this.emit('fired', { submitted, skipped, lost: 0 });
        if (released.outcomes.length > 0 && this.listenerCount('occurrences') > 0)
          this.emit(
            'occurrences',
            released.outcomes.map((o) => ({ task: o.task, outcome: RELEASE_OUTCOMES[o.code] ?? 'missed', count: o.count })),
          );
        const next = released.earliest;
        if (next !== null && next <= this.now()) continue;
        if (this.releaseAgain) continue;
        this.planRelease(next);
        return;
      }
    } finally {
      this.releasing = false;
    }
  }

  /**
   * Stops the replica: it claims nothing more, releases the occurrences due within the look-ahead
   * (those it may have staged itself) and closes its connections. Staged occurrences due later
   * are released by any other replica, or by the next one to start.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.wake();
    await this.loopDone;
    const until = this.now() + this.o.lookaheadMs;
    if (this.releaseTimer) clearLongTimeout(this.releaseTimer.timer);
    this.releaseTimer = null;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    const deadline = Date.now() + this.o.lookaheadMs + 1000; // in real time, whatever the clock does
    while (this.stagedAt !== null && this.stagedAt <= until && Date.now() < deadline) {
      const due = this.stagedAt;
      await sleep(Math.min(Math.max(0, due - this.now()), deadline - Date.now()));
      await this.release(due);
    }
    await this.beat.stop();
    this.lag.stop();
    this.subscriber.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }

  /** Kills the replica without releasing anything (as a crash would; for tests). */
  destroy(): void {
    this.closing = true;
    this.lag.stop();
    this.beat.abandon();
    this.wake();
    if (this.releaseTimer) clearLongTimeout(this.releaseTimer.timer);
    this.releaseTimer = null;
    this.subscriber.disconnect();
    this.client.disconnect();
  }
}
