/**
 * The executor's heartbeat: keeps its registry entry alive and extends the leases of the jobs it
 * holds; tells the executor which runs it lost and which were cancelled meanwhile.
 */
import { hostname } from 'node:os';
import type { QueueStore } from '../redis/queue-store.js';
import type { ServerClock } from '../redis/server-clock.js';
import { ANSWER_MS, Answers } from '../util/health.js';
import { MAX_TIMEOUT_MS } from '../util/long-timer.js';
import { rotaVersion } from '../version.js';

export interface HeldJob {
  id: string;
  token: string;
}

export interface HeartbeatDeps {
  store: QueueStore;
  /** The shard's server clock: each beat is timed on it, and tells the script what time to expect. */
  clock: ServerClock;
  workerId: string;
  leaseMs: number;
  concurrency: number;
  started: number;
  /** The task names it has handlers for (shown by the dashboard; at most MAX_LISTED_TASKS are sent). */
  tasks?: readonly string[];
  held(): HeldJob[];
  /** Runs in progress in the whole executor (its held jobs are one shard's); default the held ones. */
  running?(): number;
  /** The runs (job id and lease token) whose lease was lost. */
  onLost(runs: HeldJob[]): void;
  onCancel(ids: string[]): void;
  onError(err: unknown): void;
}

/** Task names a registry entry lists at most (the rest are counted in `moreTasks`). */
export const MAX_LISTED_TASKS = 100;

export class Heartbeat {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  /** Whether the shard answers the beats (health.ts): each beat is one Redis call. */
  readonly answers: Answers;

  /** The task names the entry lists. */
  private readonly tasks: string[];

  constructor(private readonly d: HeartbeatDeps) {
    this.tasks = (d.tasks ?? []).slice(0, MAX_LISTED_TASKS);
    this.answers = new Answers(2 * this.everyMs + ANSWER_MS);
  }

  /** How often it beats: every third of the lease (at least 50 ms). */
  get everyMs(): number {
    return Math.min(MAX_TIMEOUT_MS, Math.max(50, Math.floor(this.d.leaseMs / 3)));
  }

  /** Beats now, then every third of the lease (at most every 24.8 days, what setInterval takes: beating early is harmless). */
  start(): Promise<void> {
    // (a start tried again after a failed first beat keeps the one interval)
    this.timer ??= setInterval(() => void this.beat(), this.everyMs);
    return this.beat();
  }

  /** One beat; overlapping beats are skipped. */
  beat(): Promise<void> {
    if (this.beating) return this.beating;
    this.beating = this.run().finally(() => (this.beating = null));
    return this.beating;
  }

  private async run(): Promise<void> {
    const held = this.d.held();
    const info = {
      host: hostname(),
      pid: process.pid,
      started: this.d.started,
      concurrency: this.d.concurrency,
      running: this.d.running?.() ?? held.length,
      // (the registry entry's time to live: its expiry less this is the time of this heartbeat)
      ttlMs: this.d.leaseMs * 3,
      version: rotaVersion(),
      tasks: this.tasks,
      moreTasks: Math.max(0, (this.d.tasks?.length ?? 0) - MAX_LISTED_TASKS),
    };
    try {
      const { lost, cancel } = await this.answers.follow(
        // (a jump of the server's clock by a beat period or more is noticed by the script itself)
        this.d.clock.timed(this.everyMs, (expect) =>
          this.d.store.heartbeat({ workerId: this.d.workerId, leaseMs: this.d.leaseMs, ttlMs: info.ttlMs, info, held, expect }),
        ),
      );
      if (lost.length) this.d.onLost(lost);
      if (cancel.length) this.d.onCancel(cancel);
    } catch (err) {
      this.d.onError(err);
    }
  }

  /** Stops beating and removes the registry entry. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    await this.d.store.unregister(this.d.workerId).catch(() => {});
  }
}
