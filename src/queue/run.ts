/**
 * One run of one job on an executor: builds the handler's context, enforces the timebox, and
 * turns how the handler ended into an outcome for the finish script.
 */
import { PermanentError, TimeoutError, UnknownTaskError } from '../errors.js';
import type { Handlers, JobContext } from './context.js';
import type { Job } from './job.js';

/** Why a run's signal aborted. */
export type AbortReason = 'cancel' | 'timeout' | 'lost' | 'shutdown';

/** Outcome codes of the finish script: success, failure (retried), permanent failure, cancelled, released. */
export type OutcomeCode = 's' | 'f' | 'p' | 'c' | 'r';

export interface Outcome {
  code: OutcomeCode;
  result?: unknown;
  error?: Error;
}

export interface RunHooks {
  log(job: Job, line: string): void;
  progress(job: Job, n: number): void;
}

/** Reason text put on a run's signal. */
class RunAborted extends Error {
  constructor(readonly reason: AbortReason, message: string) {
    super(message);
    this.name = 'AbortError';
  }
}

function formatPart(p: unknown): string {
  if (typeof p === 'string') return p;
  if (p instanceof Error) return p.stack ?? p.message;
  try {
    return JSON.stringify(p);
  } catch {
    return String(p);
  }
}

/**
 * A job being run; `done` settles with its outcome, even if the handler never returns.
 * Its abort signal is made the first time the handler reads it: most handlers never do.
 */
export class Run {
  readonly done: Promise<Outcome>;
  private controller: AbortController | null = null;
  private abortedFor: AbortReason | null = null;
  private abortError: RunAborted | null = null;
  private settled = false;
  private resolve!: (o: Outcome) => void;
  private timers: NodeJS.Timeout[] | null = null;
  private gate: ((go: boolean) => void) | null = null;

  /**
   * With `gated`, the handler waits for {@link open}: a periodic run is only called once the
   * start script has accepted it (its tolerance may drop it).
   */
  constructor(
    readonly job: Job,
    handlers: Handlers,
    hooks: RunHooks,
    private readonly graceMs: number,
    gated = false,
  ) {
    this.done = new Promise<Outcome>((resolve) => (this.resolve = resolve));
    const handler = handlers[job.task];
    if (!handler) {
      this.settle({ code: 'p', error: new UnknownTaskError(job.task) });
      return;
    }
    const run = this;
    const ctx: JobContext = {
      args: job.args,
      job,
      get signal() {
        return run.signal;
      },
      log: (...parts) => hooks.log(job, parts.map(formatPart).join(' ')),
      progress: (n) => hooks.progress(job, n),
    };
    const begin = () => {
      if (job.maxRuntime) this.addTimer(() => this.abort('timeout'), job.maxRuntime);
      Promise.resolve()
        .then(() => handler(ctx))
        .then(
          (result) => this.settle(this.abortedFor ? this.abortedOutcome() : { code: 's', result }),
          (err: unknown) => this.settle(this.failedOutcome(err)),
        );
    };
    if (!gated) begin();
    else {
      this.gate = (go) => {
        if (go && !this.abortedFor) begin();
        else if (!go) this.settle({ code: 'c' });
      };
    }
  }

  /** The run's abort signal (see {@link JobContext.signal}). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortError) this.controller.abort(this.abortError);
    }
    return this.controller.signal;
  }

  /** Lets a gated run call its handler (`go`), or ends it cancelled without calling it (a dropped run). */
  open(go: boolean): void {
    const g = this.gate;
    this.gate = null;
    g?.(go);
  }

  /** The reason the signal aborted, if it did. */
  get aborted(): AbortReason | null {
    return this.abortedFor;
  }

  /**
   * Aborts the run's signal. The handler gets `graceMs` to return; after that the run is
   * settled without it (its slot is freed) with the outcome the reason calls for.
   */
  abort(reason: AbortReason): void {
    if (this.abortedFor) return;
    this.abortedFor = reason;
    const messages: Record<AbortReason, string> = {
      cancel: 'job was cancelled',
      timeout: `job ran longer than its maxRuntime of ${this.job.maxRuntime} ms`,
      lost: 'lease of the job was lost (it was recovered or taken over)',
      shutdown: 'executor is shutting down',
    };
    this.abortError = new RunAborted(reason, messages[reason]);
    this.controller?.abort(this.abortError);
    this.addTimer(() => this.settle(this.abortedOutcome()), this.graceMs);
  }

  /** Settles the run at once with `outcome` (used to release runs on shutdown). */
  settleNow(outcome: Outcome): void {
    this.settle(outcome);
  }

  /** The first outcome wins; the run's timers stop with it. */
  private settle(outcome: Outcome): void {
    if (this.settled) return;
    this.settled = true;
    if (this.timers) for (const t of this.timers) clearTimeout(t);
    this.resolve(outcome);
  }

  private addTimer(fn: () => void, ms: number): void {
    if (this.settled) return;
    (this.timers ??= []).push(setTimeout(fn, ms));
  }

  private abortedOutcome(): Outcome {
    switch (this.abortedFor) {
      case 'cancel':
        return { code: 'c' };
      case 'timeout':
        return {
          code: 'p',
          error: new TimeoutError(`timed out: ran longer than its maxRuntime of ${this.job.maxRuntime} ms`),
        };
      case 'shutdown':
        return { code: 'r' };
      default:
        return { code: 'f', error: new Error('lease lost') };
    }
  }

  private failedOutcome(err: unknown): Outcome {
    if (this.abortedFor) return this.abortedOutcome();
    const error = err instanceof Error ? err : new Error(formatPart(err));
    return { code: error instanceof PermanentError ? 'p' : 'f', error };
  }
}
