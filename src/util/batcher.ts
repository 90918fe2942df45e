import { removeFrom } from './churn.js';

/**
 * Coalesces items produced together into one call, so that a hundred jobs finishing together
 * cost one script call instead of a hundred. When "together" ends is up to `defer`; with
 * `maxInFlight`, also up to the calls still unanswered (group commit: while that many are in
 * flight, new items wait and go with the next call, sent the moment one is answered).
 */
export interface BatcherOptions {
  /** Called after each call is sent. */
  onSent?: () => void;
  /**
   * Runs the flush later: by default at the end of this turn of the event loop (setImmediate),
   * so items added by the callbacks of one I/O or timer phase go together.
   */
  defer?: (flush: () => void) => void;
  /** Calls unanswered at most; default no limit. An idle batcher sends at once all the same. */
  maxInFlight?: number;
}

export class Batcher<T> {
  // (arrays, not a Set: items and calls come and go all the time, see churn.ts)
  private items: T[] = [];
  private scheduled = false;
  private readonly inflight: Array<Promise<void>> = [];
  private readonly onSent: () => void;
  private readonly defer: (flush: () => void) => void;
  private readonly maxInFlight: number;

  constructor(
    private readonly send: (items: T[]) => Promise<void>,
    opts: BatcherOptions = {},
  ) {
    this.onSent = opts.onSent ?? (() => {});
    this.defer = opts.defer ?? setImmediate;
    this.maxInFlight = opts.maxInFlight ?? Infinity;
  }

  /** Adds an item (each once); it is sent with the others added before the flush `defer` runs. */
  add(item: T): void {
    this.items.push(item);
    if (!this.scheduled) {
      this.scheduled = true;
      this.defer(() => this.flush());
    }
  }

  /** Whether items wait to be sent. */
  get waiting(): boolean {
    return this.items.length > 0;
  }

  /** Whether items wait to be sent, or calls to be answered. */
  get busy(): boolean {
    return this.items.length > 0 || this.inflight.length > 0;
  }

  /** Takes back an item not sent yet; false when it was sent already (or never added). */
  withdraw(item: T): boolean {
    return removeFrom(this.items, item);
  }

  /** Sends what is pending now, unless `maxInFlight` calls are unanswered (then it goes when one is). */
  flush(): void {
    this.scheduled = false;
    if (this.items.length === 0 || this.inflight.length >= this.maxInFlight) return;
    const batch = this.items;
    this.items = [];
    const p = this.send(batch).finally(() => {
      removeFrom(this.inflight, p);
      if (!this.scheduled) this.flush();
    });
    this.inflight.push(p);
    this.onSent();
  }

  /** Resolves once everything added so far has been sent and answered. */
  async drain(): Promise<void> {
    this.flush();
    while (this.inflight.length > 0) {
      await Promise.allSettled([...this.inflight]);
      this.flush();
    }
  }
}
