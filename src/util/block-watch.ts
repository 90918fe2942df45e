/**
 * Notices the executor's event loop held past a limit (a third of the lease: the heartbeat runs
 * every third, so a longer block may lose leases): a timer every half of the limit (unref'd)
 * measures how late it fired, and reports a block longer than the limit once it ends, with the
 * tasks of the runs in progress then and of those that ended since the tick before (the run that
 * blocked may have ended right after).
 */
export class BlockWatch {
  private timer: NodeJS.Timeout | null = null;
  private last = 0;
  private readonly ended = new Set<string>();

  constructor(
    private readonly limitMs: number,
    private readonly tasks: () => string[],
    private readonly onBlock: (ms: number, tasks: string[]) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    const every = Math.max(50, Math.floor(this.limitMs / 2));
    this.last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      const late = now - this.last - every;
      this.last = now;
      if (late > this.limitMs) this.onBlock(late, [...new Set([...this.ended, ...this.tasks()])]);
      this.ended.clear();
    }, every);
    this.timer.unref();
  }

  /** A run of `task` ended (while watching). */
  runEnded(task: string): void {
    if (this.timer) this.ended.add(task);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
