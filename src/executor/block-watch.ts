/**
 * Notices the executor's event loop held past a limit (a third of the lease: the heartbeat runs
 * every third, so a longer block may lose leases): a timer every sixth of the lease (half the limit, unref'd)
 * measures how late it fired, and reports a block longer than the limit once it ends.
 */
export class BlockWatch {
  private timer: NodeJS.Timeout | null = null;
  private last = 0;

  constructor(
    private readonly limitMs: number,
    private readonly onBlock: (ms: number) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    const every = Math.max(50, Math.floor(this.limitMs / 2));
    this.last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      const late = now - this.last - every;
      this.last = now;
      if (late > this.limitMs) this.onBlock(late);
    }, every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
