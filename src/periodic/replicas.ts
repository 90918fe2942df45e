/**
 * Which scheduler replicas are alive: each running replica keeps its id in the queue's
 * `p:replicas` sorted set with an expiry (Redis server clock, ms) that it pushes forward every
 * {@link REPLICA_BEAT_MS}; a replica that stops removes itself, one that dies expires after
 * {@link REPLICA_TTL_MS}. Readers (`rota periodic add` / `trigger`) use it to warn when nothing
 * would submit the runs (PeriodicTasks.schedulers, through PeriodicReads.replicas).
 */
import { ANSWER_MS, Answers } from '../executor/health.js';
import type { PeriodicStore } from '../redis/periodic-store.js';

/** How often a replica renews its entry (ms). */
export const REPLICA_BEAT_MS = 5000;
/** How long an entry lasts without renewal (ms): three missed renewals. */
export const REPLICA_TTL_MS = 3 * REPLICA_BEAT_MS;
/** How long a stopping replica waits to remove its entry (ms). */
const STOP_WAIT_MS = 1000;

/** Keeps one replica's entry in `p:replicas` alive while it runs. */
export class ReplicaBeat {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  /** Whether Redis answers the renewals (../executor/health.ts): each is one Redis call. */
  readonly answers = new Answers(2 * REPLICA_BEAT_MS + ANSWER_MS);

  constructor(
    private readonly store: PeriodicStore,
    private readonly id: string,
  ) {}

  /** Writes the entry now and renews it every {@link REPLICA_BEAT_MS}; rejects when the first write fails. */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => {
      // A renewal that fails (Redis away) is retried at the next beat; the scheduler reports the outage.
      this.beating ??= this.beat()
        .catch(() => {})
        .finally(() => (this.beating = null));
    }, REPLICA_BEAT_MS);
    this.timer.unref();
  }

  /**
   * Stops renewing and removes the entry. With Redis away it does not wait (the client retries
   * through outages): the entry expires instead.
   */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.store.client.status !== 'ready') return;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.resolve(this.beating).then(() => this.store.removeReplica(this.id)),
      new Promise((resolve) => (timeout = setTimeout(resolve, STOP_WAIT_MS))),
    ]).catch(() => {});
    clearTimeout(timeout);
  }

  /** Stops renewing and leaves the entry to expire (a crash). */
  abandon(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private beat(): Promise<void> {
    return this.answers.follow(this.store.beatReplica(this.id, REPLICA_TTL_MS));
  }
}
