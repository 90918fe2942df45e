/**
 * Which scheduler replicas are alive: each running replica keeps its id in the queue's
 * `p:replicas` sorted set with an expiry (Redis server clock, ms) that it pushes forward every
 * {@link REPLICA_BEAT_MS}, and beside it its record (`p:rep:<id>`: host, pid, start, claims and
 * lateness, {@link ReplicaRecord}) with the same TTL; a replica that stops removes both, one that
 * dies expires after {@link REPLICA_TTL_MS}. Readers (`rota periodic add` / `trigger`) use it to
 * warn when nothing would submit the runs (PeriodicTasks.schedulers), `rota schedulers` and the
 * dashboard to list them (PeriodicTasks.replicas).
 */
import { hostname } from 'node:os';
import type { PeriodicStore } from '../redis/periodic-store.js';
import { ANSWER_MS, Answers } from '../util/health.js';
import { rotaVersion } from '../version.js';

/** How often a replica renews its entry (ms). */
export const REPLICA_BEAT_MS = 5000;
/** How long an entry lasts without renewal (ms): three missed renewals. */
export const REPLICA_TTL_MS = 3 * REPLICA_BEAT_MS;
/** How long a stopping replica waits to remove its entry (ms). */
const STOP_WAIT_MS = 1000;

/** Beats the lateness window spans: its maximum is over the last minute. */
const LATE_BEATS = 12;

/** What a replica counts of its own work, written into its record at each beat. */
export interface ReplicaCounts {
  /** Tasks it has claimed and not committed yet (claims held now). */
  claims: number;
  /** Tasks it claimed since it started. */
  claimed: number;
  /** Occurrences its releases submitted since it started. */
  released: number;
}

/** A replica's record (`p:rep:<id>`, JSON), as each beat writes it; `beat` is the server's time of the beat. */
export interface ReplicaRecord extends ReplicaCounts {
  host: string;
  pid: number;
  /** When the replica started (ms since the epoch, its own clock). */
  started: number;
  version: string;
  /** Lateness of its last release that submitted or skipped something (ms after the earliest occurrence it released was due), or null: none yet. */
  lateMs: number | null;
  /** The largest such lateness within the last minute (ms), or null: no release then. */
  maxLateMs: number | null;
}

/**
 * A replica's lateness: the last one observed, and the largest of the last {@link LATE_BEATS}
 * beats (a fixed ring of per-beat maxima, so its size never grows).
 */
export class Lateness {
  private last: number | null = null;
  private current: number | null = null;
  private readonly ring: Array<number | null> = [];

  observe(ms: number): void {
    const v = Math.max(0, Math.round(ms));
    this.last = v;
    this.current = Math.max(this.current ?? 0, v);
  }

  /** Ends a beat: answers the last lateness and the maximum of the window, this beat included. */
  beat(): { lateMs: number | null; maxLateMs: number | null } {
    this.ring.push(this.current);
    this.current = null;
    if (this.ring.length > LATE_BEATS) this.ring.shift();
    const seen = this.ring.filter((v): v is number => v !== null);
    return { lateMs: this.last, maxLateMs: seen.length ? Math.max(...seen) : null };
  }
}

/** Keeps one replica's entry in `p:replicas` and its record alive while it runs. */
export class ReplicaBeat {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  /** Whether Redis answers the renewals (../util/health.ts): each is one Redis call. */
  readonly answers = new Answers(2 * REPLICA_BEAT_MS + ANSWER_MS);

  private readonly started = Date.now();

  constructor(
    private readonly store: PeriodicStore,
    private readonly id: string,
    private readonly counts: () => ReplicaCounts,
    private readonly lateness: Lateness,
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
    const record: Omit<ReplicaRecord, 'beat'> = {
      host: hostname(),
      pid: process.pid,
      started: this.started,
      version: rotaVersion(),
      ...this.counts(),
      ...this.lateness.beat(),
    };
    return this.answers.follow(this.store.beatReplica(this.id, REPLICA_TTL_MS, { ...record }));
  }
}
