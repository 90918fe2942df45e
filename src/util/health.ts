/**
 * Health of a long-running process (an executor, a scheduler replica): what readiness and
 * liveness checks report, and the event-loop lag monitor they share. The checks read state the
 * process keeps anyway (its connections' status, its last heartbeat's answer); none sends a
 * Redis command.
 */

/** One check: whether it passes and, in words, why. */
export interface HealthCheck {
  ok: boolean;
  detail: string;
}

/** What `health()` reports: ready to get work, alive (not wedged), and each check by name. */
export interface Health {
  /** False only when the process is wedged (its loop stalled, its event loop lagging): restart it. */
  live: boolean;
  /** True when every readiness check passes: Redis answers, it is registered, it is not closing. */
  ready: boolean;
  checks: Record<string, HealthCheck>;
}

/** A beat unanswered for this long means the shard's primary does not answer. */
export const ANSWER_MS = 2000;
/** The take loop is stalled when it has made no progress for this long while it should run. */
export const STALL_AFTER_MS = 120_000;
/** The event loop is wedged when a timer fires this late. */
export const EVENT_LOOP_LAG_MS = 10_000;
/** How often the lag monitor's timer runs. */
const LAG_TICK_MS = 500;

/** Builds a Health from readiness and liveness checks. */
export function health(ready: Record<string, HealthCheck>, live: Record<string, HealthCheck>): Health {
  const all = (c: Record<string, HealthCheck>) => Object.values(c).every((x) => x.ok);
  return { live: all(live), ready: all(ready), checks: { ...ready, ...live } };
}

/**
 * Measures event-loop lag by timer drift: a timer every 500 ms (unref'd) notes how late it fired;
 * a probe sees the last drift, or the time since the last tick when that is longer (a probe that
 * runs right after a long block, before the timer's turn).
 */
export class LagMonitor {
  private timer: NodeJS.Timeout | null = null;
  private lastTick = 0;
  private drift = 0;

  start(): void {
    if (this.timer) return;
    this.lastTick = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      this.drift = Math.max(0, now - this.lastTick - LAG_TICK_MS);
      this.lastTick = now;
    }, LAG_TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  check(now = performance.now()): HealthCheck {
    if (!this.timer) return { ok: true, detail: 'not measured (not running)' };
    const lag = Math.max(this.drift, now - this.lastTick - LAG_TICK_MS);
    const ok = lag < EVENT_LOOP_LAG_MS;
    return { ok, detail: `event loop lag ${Math.round(Math.max(0, lag))} ms (limit ${EVENT_LOOP_LAG_MS} ms)` };
  }
}

/**
 * Whether Redis answers a periodic call (a heartbeat): the last call answered within `freshMs`,
 * and none has been waiting for an answer longer than ANSWER_MS.
 */
export class Answers {
  private lastOk = 0;
  private pendingSince = 0;

  constructor(private readonly freshMs: number) {}

  /** Follows one call. */
  follow<T>(call: Promise<T>): Promise<T> {
    const since = performance.now();
    this.pendingSince ||= since;
    return call.then(
      (v) => {
        this.lastOk = performance.now();
        this.pendingSince = 0;
        return v;
      },
      (err: unknown) => {
        this.pendingSince = 0;
        throw err;
      },
    );
  }

  /** Time since the last answer (Infinity before the first). */
  ageMs(now = performance.now()): number {
    return this.lastOk === 0 ? Number.POSITIVE_INFINITY : now - this.lastOk;
  }

  check(what: string, now = performance.now()): HealthCheck {
    if (this.lastOk === 0) return { ok: false, detail: `${what}: no answer yet` };
    if (this.pendingSince && now - this.pendingSince >= ANSWER_MS)
      return { ok: false, detail: `${what}: no answer for ${Math.round(now - this.pendingSince)} ms` };
    const age = now - this.lastOk;
    if (age >= this.freshMs) return { ok: false, detail: `${what}: last answer ${Math.round(age)} ms ago` };
    return { ok: true, detail: `${what}: answered ${Math.round(age)} ms ago` };
  }
}
