/** A scheduler replica's readiness and liveness (Scheduler.health), from what the replica keeps: no Redis command. */
import type { Redis } from 'ioredis';
import { type Answers, type Health, type HealthCheck, health, type LagMonitor } from '../util/health.js';

/** What a replica's health is read from. */
export interface ReplicaState {
  /** The start-up passed: the schema matched and the library loaded. */
  started: boolean;
  connections: readonly Redis[];
  /** Whether Redis answers the replica's heartbeat. */
  heartbeat: Answers;
  closing: boolean;
  /** How long the loop may go without a pass before it counts as stalled (ms). */
  stallMs: number;
  /** When the loop last began a pass or woke (performance.now() ms). */
  lastProgress: number;
  /** The loop waits on Redis (a claim or a commit in flight): an outage, not a stall. */
  onRedis: boolean;
  lag: LagMonitor;
}

/**
 * Ready: started, its connections ready, its heartbeat answered, not closing. Live: its loop began
 * a pass within `stallMs` unless it waits on Redis, and the event loop is not lagging.
 */
export function replicaHealth(r: ReplicaState): Health {
  const now = performance.now();
  const ready: Record<string, HealthCheck> = {};
  ready.started = r.started
    ? { ok: true, detail: 'schema matched, library loaded' }
    : { ok: false, detail: 'not started (start() not called, or it failed)' };
  const down = r.connections.filter((c) => c.status !== 'ready').map((c) => c.status);
  ready.connections = {
    ok: down.length === 0,
    detail: down.length === 0 ? `${r.connections.length} connection(s) ready` : `not ready: ${down.join(', ')}`,
  };
  ready.replica = r.heartbeat.check('replica heartbeat', now);
  ready.closing = { ok: !r.closing, detail: r.closing ? 'shutting down' : 'not shutting down' };
  const since = Math.max(0, now - r.lastProgress);
  const stalled = r.started && !r.closing && !r.onRedis && since >= r.stallMs;
  const live: Record<string, HealthCheck> = {
    loop: { ok: !stalled, detail: `last pass ${Math.round(since)} ms ago (limit ${r.stallMs} ms unless waiting on Redis)` },
    eventLoop: r.lag.check(now),
  };
  return health(ready, live);
}
