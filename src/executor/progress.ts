/**
 * Throttles the progress a handler reports (ctx.progress), per run: the first update goes at
 * once, later ones at most once per interval (the newest value when the interval ends), and the
 * last one when the run ends, so that a handler reporting in a tight loop costs a few writes.
 */
import type { Job } from '../queue/job.js';

interface Pending {
  job: Job;
  /** When the last update was sent (performance.now()). */
  sentAt: number;
  /** The newest value not sent yet. */
  value?: number;
  timer?: NodeJS.Timeout;
}

export class ProgressThrottle {
  // (a plain object: runs come and go all the time, see ../util/churn.ts)
  private readonly runs: Record<string, Pending | undefined> = Object.create(null);
  /** Runs that reported progress (so that the end of the others costs no lookup). */
  private count = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly send: (job: Job, progress: number) => void,
  ) {}

  /** A run reported `value`. */
  report(job: Job, value: number): void {
    const now = performance.now();
    const p = this.runs[job.id];
    if (!p || (p.value === undefined && now - p.sentAt >= this.intervalMs)) {
      if (!p) this.count++;
      this.runs[job.id] = { job, sentAt: now };
      this.send(job, value);
      return;
    }
    p.value = value;
    p.timer ??= setTimeout(() => this.flush(job.id), Math.max(1, p.sentAt + this.intervalMs - now));
  }

  /** The run of job `id` ended: its newest value goes now. */
  end(id: string): void {
    if (this.count === 0) return;
    const p = this.runs[id];
    if (!p) return;
    if (p.timer) clearTimeout(p.timer);
    delete this.runs[id];
    this.count--;
    if (p.value !== undefined) this.send(p.job, p.value);
  }

  private flush(id: string): void {
    const p = this.runs[id];
    if (!p || p.value === undefined) return;
    const value = p.value;
    p.value = undefined;
    p.timer = undefined;
    p.sentAt = performance.now();
    this.send(p.job, value);
  }
}
