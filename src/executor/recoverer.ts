/**
 * The executor's recovery duty: puts back jobs whose lease expired (their executor died, froze
 * or lost Redis), clears stale marks of its own id at start, and removes finished jobs past
 * their keep age, and submits fan-out children committed but left unsubmitted (their executor
 * died right after the parent's finish). Every live executor runs it; the script is atomic, so they never collide.
 */

import type { CrossRelay } from '../queue/cross.js';
import { submitCommitted } from '../queue/fanout.js';
import type { QueueStore } from '../redis/queue-store.js';
import type { ServerClock } from '../redis/server-clock.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../util/long-timer.js';

/** How long finished jobs are kept: the newest `count`, each for at most `age` ms (-1: no bound). */
export interface Keep {
  count?: number;
  age?: number;
}

export interface RecovererDeps {
  store: QueueStore;
  /**
   * The shard's server clock: a pass tells the script what time to expect, and leaves leases
   * alone within a lease of a forward jump (lua/includes/clock.lua).
   */
  clock: ServerClock;
  workerId: string;
  /** The relay of flows' children in other queues (../queue/cross.ts). */
  relay?: CrossRelay;
  retryDelay: number;
  everyMs: number;
  /**
   * Lease length (ms). Expired leases are left alone while the Redis server has been up for less
   * than this (after a restart every lease has expired; executors get one lease to heartbeat).
   */
  leaseMs?: number;
  keepSucceeded: Required<Keep>;
  keepFailed: Required<Keep>;
  /** The jobs a pass recovered (their lease expired, or their marks were this executor's own). */
  onRecovered?(jobs: RecoveredJob[]): void;
  onError(err: unknown): void;
}

/** A job a recovery pass ended as a failed attempt: its id, task and group. */
export interface RecoveredJob {
  id: string;
  task: string;
  group: string;
}

export class Recoverer {
  private timer: LongTimer | null = null;

  constructor(private readonly d: RecovererDeps) {}

  /** Clears stale marks of this executor's id, then runs a pass at a jittered interval. */
  async start(): Promise<void> {
    await this.pass(true);
    const schedule = () => {
      const jitter = 0.75 + Math.random() * 0.5;
      this.timer = setLongTimeout(
        async () => {
          await this.pass(false);
          if (this.timer) schedule();
        },
        Math.round(this.d.everyMs * jitter),
      );
    };
    schedule();
  }

  /** One recovery pass; `own` also releases jobs still marked with this executor's id. */
  async pass(own: boolean): Promise<string[]> {
    // While Redis is unreachable, skip passes rather than queue them for the reconnect.
    if (!own && this.d.store.client.status !== 'ready') return [];
    try {
      // (a jump by a third of a lease or more could expire live leases: the script notices it)
      const tolerance = Math.floor((this.d.leaseMs ?? 0) / 3);
      const { recovered, labels } = await this.d.clock.timed(tolerance, (expect) =>
        this.d.store.recover({
          retryDelay: this.d.retryDelay,
          maxLeases: 1000,
          ownWorkerId: own ? this.d.workerId : undefined,
          keepSucceededAgeMs: this.d.keepSucceeded.age,
          keepFailedAgeMs: this.d.keepFailed.age,
          maxRemoved: 500,
          leaseMs: this.d.leaseMs,
          expect,
        }),
      );
      if (recovered.length > 0) this.d.onRecovered?.(recovered.map((id, i) => ({ id, ...labels[i] })));
      // Children committed by an executor that died before it submitted them all.
      await submitCommitted(this.d.store);
      // Flow children in other queues, and ends of children whose parents are there.
      if (this.d.relay) {
        await this.d.relay.submits(this.d.store);
        await this.d.relay.ends(this.d.store);
      }
      return recovered;
    } catch (err) {
      this.d.onError(err);
      return [];
    }
  }

  stop(): void {
    clearLongTimeout(this.timer);
    this.timer = null;
  }
}
