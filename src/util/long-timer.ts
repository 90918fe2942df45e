/**
 * Timers of any length. Node fires a setTimeout of 2^31 ms or more after 1 ms, so a longer one is
 * chained from timers of at most {@link MAX_TIMEOUT_MS} until its whole delay has passed.
 */

/** Longest delay Node's setTimeout honours (about 24.8 days). */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A timer longer than Node takes in one setTimeout: the remaining delay, re-armed in steps. */
class ChainedTimer {
  private timer: NodeJS.Timeout;

  constructor(
    private readonly fn: () => void,
    private remaining: number,
  ) {
    this.timer = this.arm();
  }

  private arm(): NodeJS.Timeout {
    const step = Math.min(this.remaining, MAX_TIMEOUT_MS);
    return setTimeout(() => {
      this.remaining -= step;
      if (this.remaining > 0) this.timer = this.arm();
      else this.fn();
    }, step);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** What {@link setLongTimeout} returns; cancel it with {@link clearLongTimeout}. */
export type LongTimer = NodeJS.Timeout | ChainedTimer;

/**
 * Calls `fn` once after `ms` milliseconds, however long that is (`Infinity`: never). A delay Node
 * takes at once is a plain setTimeout, so short timers cost nothing more.
 */
export function setLongTimeout(fn: () => void, ms: number): LongTimer {
  return ms > MAX_TIMEOUT_MS ? new ChainedTimer(fn, ms) : setTimeout(fn, ms);
}

/** Cancels a timer of {@link setLongTimeout} (nothing when it fired or was cancelled already). */
export function clearLongTimeout(timer: LongTimer | null | undefined): void {
  if (timer instanceof ChainedTimer) timer.clear();
  else if (timer) clearTimeout(timer);
}
