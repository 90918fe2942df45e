/**
 * What `rota bench` shows while it runs: on a terminal one line redrawn in place (a bar of the
 * steps, the step's workload and system, the jobs done of the step's planned and an ETA); on
 * anything else a line when a step begins and one every {@link LINE_EVERY_MS} while it runs. The
 * clock is injected, so what it prints is a function of the messages and the times alone.
 */
import type { SystemName } from './peers/types.js';
import type { Workload } from './plan.js';

/** How often a line is printed within a step when the output is not a terminal (ms). */
export const LINE_EVERY_MS = 5000;
/** Width of the terminal bar, in characters. */
const BAR = 30;

/** Where progress goes: a stream (stderr), a terminal or not. */
export interface ProgressOut {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** A step's start, as the runner reports it. */
export interface StepStart {
  workload: Workload;
  system: SystemName;
  step: number;
  steps: number;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** A duration for an ETA: `45 s`, `3 min 20 s`, `1 h 5 min`. */
export function etaText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Draws the bench's progress on `out`. */
export class Progress {
  private step: StepStart | null = null;
  private startedAt = 0;
  private lastLine = 0;
  private readonly tty: boolean;

  constructor(
    private readonly out: ProgressOut,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tty = Boolean(out.isTTY);
  }

  /** A step begins. */
  phase(m: StepStart): void {
    this.step = m;
    this.startedAt = this.now();
    this.lastLine = this.startedAt;
    if (this.tty) this.draw('');
    else this.out.write(`rota bench: [${m.step + 1}/${m.steps}] ${this.label()}\n`);
  }

  /** Jobs done so far in the step, of `total` planned (undefined: not known ahead). */
  jobs(done: number, total?: number): void {
    if (!this.step) return;
    const t = this.now();
    const elapsed = t - this.startedAt;
    const of = total ? `${fmt(done)}/${fmt(total)} jobs` : `${fmt(done)} jobs`;
    const eta = total && done > 0 && done < total ? `, ETA ${etaText((elapsed / done) * (total - done))}` : '';
    if (this.tty) {
      this.draw(` ${of}${eta}`);
      return;
    }
    if (t - this.lastLine < LINE_EVERY_MS) return;
    this.lastLine = t;
    this.out.write(
      `rota bench: [${this.step.step + 1}/${this.step.steps}] ${this.label()}: ${of}${eta} (${etaText(elapsed)} in)\n`,
    );
  }

  /** Clears the terminal line (the report follows). */
  end(): void {
    if (this.tty) this.out.write('\r\x1b[2K');
    this.step = null;
  }

  private label(): string {
    return `${this.step!.workload} on ${this.step!.system}`;
  }

  private draw(tail: string): void {
    const m = this.step!;
    const filled = Math.round((m.step / m.steps) * BAR);
    this.out.write(`\r\x1b[2K[${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${m.step + 1}/${m.steps} ${this.label()}${tail}`);
  }
}
