/**
 * Coalesces items produced together into one call, so that a hundred jobs finishing together
 * cost one script call instead of a hundred. When "together" ends is up to `defer`.
 */
export class Batcher<T> {
  private items = new Set<T>();
  private scheduled = false;
  private inflight = new Set<Promise<void>>();

  /**
   * `defer` runs the flush later: by default at the end of this turn of the event loop
   * (setImmediate), so items added by the callbacks of one I/O or timer phase go together.
   */
  constructor(
    private readonly send: (items: T[]) => Promise<void>,
    private readonly onSent: () => void = () => {},
    private readonly defer: (flush: () => void) => void = setImmediate,
  ) {}

  /** Adds an item; it is sent with the others added before the flush `defer` runs. */
  add(item: T): void {
    this.items.add(item);
    if (!this.scheduled) {
      this.scheduled = true;
      this.defer(() => this.flush());
    }
  }

  /** Takes back an item not sent yet; false when it was sent already (or never added). */
  withdraw(item: T): boolean {
    return this.items.delete(item);
  }

  /** Sends what is pending now. */
  flush(): void {
    this.scheduled = false;
    if (this.items.size === 0) return;
    const batch = [...this.items];
    this.items.clear();
    const p = this.send(batch).finally(() => this.inflight.delete(p));
    this.inflight.add(p);
    this.onSent();
  }

  /** Resolves once everything added so far has been sent and answered. */
  async drain(): Promise<void> {
    this.flush();
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }
}
