/**
 * One run of one job on an executor: builds the handler's context, enforces the timebox, and
 * turns how the handler ended into an outcome for the finish script.
 */

import { z } from 'zod';
import { PermanentError, TimeoutError, UndecodableJobError, UnknownTaskError, ValidationError } from '../errors.js';
import { checkOptions } from '../options.js';
import type { Batch } from '../queue/batch.js';
import type { ChildPage, Handlers, JobContext } from '../queue/context.js';
import type { FanOutOptions } from '../queue/fanout.js';
import type { Job } from '../queue/job.js';
import type { RunSpan } from '../queue/tracing.js';
import { UNDECODABLE } from '../redis/job-codec.js';
import { BATCH, type OutcomeCode } from '../redis/wire.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../util/long-timer.js';
import { cutError, cutLogLine, MAX_RUN_LOG_BYTES, RUN_LOG_FULL } from './log-limits.js';

/** Why a run's signal aborted. */
export type AbortReason = 'cancel' | 'timeout' | 'lost' | 'shutdown';

/** Outcome codes of the finish script (OUTCOME in src/redis/wire.ts): success, failure (retried), permanent failure, cancelled, released. */
export type { OutcomeCode };

export interface Outcome {
  code: OutcomeCode;
  result?: unknown;
  error?: Error;
}

export interface RunHooks {
  log(job: Job, line: string): void;
  progress(job: Job, n: number): void;
  /**
   * Checks the children of a fan-out (rejecting with a ValidationError, nothing written, when
   * they are bad), then stages them; resolves how many entries it staged (chunks and a continuation; 0: none, a plain success). `trace`: the traceparent of
   * the run's span, when it is traced (the children store it).
   */
  fanOut(job: Job, items: readonly unknown[], options: FanOutOptions, trace?: string): Promise<number>;
  /** The handler is about to be called. */
  began?(job: Job): void;
  /** Reads a page of the children `job` waited for (see JobContext.children). */
  children(job: Job, offset: number, limit: number): Promise<ChildPage>;
  /** A handle on the batch of `job` (a job of it, or its callback), for ctx.batch. */
  batch?(job: Job): Batch | undefined;
  /** Starts the run's span, when tracing is on (see src/queue/tracing.ts). */
  trace?(job: Job): RunSpan | null;
  /** Told of a handler call that held the event loop longer than {@link blockWarnMs} before it returned. */
  blocked?(job: Job, ms: number): void;
  /** See {@link blocked}; Infinity: never. */
  blockWarnMs?: number;
}

/** What an outcome's code ends a run as, for its span. */
const OUTCOME_NAMES: Record<OutcomeCode, string> = {
  s: 'success',
  o: 'success',
  f: 'failed',
  p: 'failed',
  c: 'cancelled',
  r: 'released',
  u: 'unhandled',
};

/** Reason text put on a run's signal. */
class RunAborted extends Error {
  constructor(
    readonly reason: AbortReason,
    message: string,
  ) {
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

/** Where a handler's context keeps its run (for the shared `signal` accessor). */
const CONTEXT_RUN = Symbol('run');

/** The options of ctx.children(). */
const CHILD_PAGE = { offset: z.number().int().min(0).optional(), limit: z.number().int().min(1).max(1000).optional() };

/** The `signal` property of every context: the run's signal, made on first read. */
const SIGNAL: PropertyDescriptor = {
  get(this: { [CONTEXT_RUN]: Run }) {
    return this[CONTEXT_RUN].signal;
  },
  enumerable: true,
  configurable: true,
};

/**
 * Lets the handler given `ctx` say what ends it when it ignores its aborted signal past the
 * grace period (an isolated task ends its thread or process): `end` answers a sentence the run's
 * log and error then carry.
 */
export function onAbandon(ctx: JobContext, end: () => string): void {
  const run = (ctx as { [CONTEXT_RUN]?: Run })[CONTEXT_RUN];
  if (run) run.abandon = end;
}

/**
 * Tells `aborted` when the run of `ctx` aborts (at once if it did), without making its signal:
 * an isolated task passes the abort on, and most runs never abort. Without a run behind `ctx`,
 * it listens to `ctx.signal`.
 */
export function onAborted(ctx: JobContext, aborted: (message: string) => void): void {
  const run = (ctx as { [CONTEXT_RUN]?: Run })[CONTEXT_RUN];
  if (!run) {
    const { signal } = ctx;
    const tell = () => aborted(String((signal.reason as { message?: unknown } | undefined)?.message ?? 'aborted'));
    if (signal.aborted) tell();
    else signal.addEventListener('abort', tell, { once: true });
    return;
  }
  run.onAbort = aborted;
  if (run.abortMessage !== null) aborted(run.abortMessage);
}

/** Told, once, how a run ended. */
export type RunEnded = (run: Run, outcome: Outcome) => void;

/**
 * A job being run; `onEnd` is told its outcome once, even if the handler never returns (and
 * {@link done} settles with it). The handler is called in a microtask after construction, so the
 * caller can note the run first. Its abort signal is made the first time the handler reads it:
 * most handlers never do. A run allocates little: its context, and no promise unless the handler
 * returns one or someone reads `done`.
 */
export class Run {
  private controller: AbortController | null = null;
  private abortedFor: AbortReason | null = null;
  private abortError: RunAborted | null = null;
  private outcome: Outcome | null = null;
  private waiters: Array<(o: Outcome) => void> | null = null;
  private timers: LongTimer[] | null = null;
  private gate: ((go: boolean) => void) | null = null;
  /** The run's span, while it is traced and has not ended. */
  private span: RunSpan | null = null;
  private readonly handler: Handlers[string] | undefined;
  /** Bytes of log lines the run stored (ctx.log). */
  private logBytes = 0;
  /** When the handler was called (performance.now()), 0 until then. */
  began = 0;
  /** How long the handler ran (ms), once it settled; undefined for a run never begun. */
  ranMs: number | undefined;
  /** The staging of the run's fan-out (ctx.fanOut), once called: its success waits for it. */
  fanned: Promise<number> | null = null;
  /** What ends a handler that ignored its aborted signal past the grace period (see {@link onAbandon}). */
  abandon: (() => string) | null = null;
  /** Told of the abort (see {@link onAborted}). */
  onAbort: ((message: string) => void) | null = null;

  /**
   * With `gated`, the handler waits for {@link open}: a periodic run is only called once the
   * start script has accepted it (its tolerance may drop it).
   */
  constructor(
    readonly job: Job,
    handlers: Handlers,
    private readonly hooks: RunHooks,
    private readonly graceMs: number,
    gated = false,
    private readonly onEnd: RunEnded | null = null,
  ) {
    const undecodable = (job as { [UNDECODABLE]?: string })[UNDECODABLE];
    if (undecodable !== undefined) {
      // (a job read back without its args: no handler may run it)
      queueMicrotask(() => this.settle({ code: 'p', error: new UndecodableJobError(job.id, undecodable) }));
      return;
    }
    this.handler = handlers[job.task];
    if (!this.handler) {
      // (passed on to an executor that has the task, or failed when none has: includes/unhandled)
      queueMicrotask(() => this.settle({ code: 'u', error: new UnknownTaskError(job.task) }));
      return;
    }
    if (!gated) queueMicrotask(() => this.begin());
    else {
      this.gate = (go) => {
        if (go && !this.abortedFor) this.begin();
        else if (!go) this.settle({ code: 'c' });
      };
    }
  }

  /** Settles with the run's outcome. */
  get done(): Promise<Outcome> {
    const o = this.outcome;
    if (o) return Promise.resolve(o);
    return new Promise<Outcome>((resolve) => {
      this.waiters ??= [];
      this.waiters.push(resolve);
    });
  }

  private begin(): void {
    if (this.outcome) return;
    this.began = performance.now();
    this.hooks.began?.(this.job);
    if (this.job.maxRuntime) this.addTimer(() => this.abort('timeout'), this.job.maxRuntime);
    let returned: unknown;
    try {
      const span = this.hooks.trace?.(this.job) ?? null;
      if (span) {
        this.span = span;
        returned = span.within(() => this.handler!(this.context()));
      } else {
        returned = this.handler!(this.context());
      }
    } catch (err) {
      this.failed(err);
      return;
    }
    const { blockWarnMs } = this.hooks;
    if (blockWarnMs !== undefined) {
      const held = performance.now() - this.began;
      if (held > blockWarnMs) this.hooks.blocked?.(this.job, held);
    }
    if (
      returned !== null &&
      (typeof returned === 'object' || typeof returned === 'function') &&
      typeof (returned as PromiseLike<unknown>).then === 'function'
    ) {
      // adopted through Promise.resolve (the same promise when it is a native one): a thenable
      // whose then throws fails the run instead of escaping
      Promise.resolve(returned).then(
        (result) => this.succeeded(result),
        (err: unknown) => this.failed(err),
      );
    } else {
      this.succeeded(returned);
    }
  }

  /**
   * What the handler gets: a plain object (handlers destructure it, or spread it into their own),
   * whose signal is made on first read. `signal` is an own accessor, so that a spread copies it
   * too, and one shared by every context (it finds its run under CONTEXT_RUN), which V8 adds
   * without leaving its fast object layout (an object literal with a getter of its own costs
   * about four times as much to make).
   */
  private context(): JobContext {
    const { job, hooks } = this;
    const context = {
      args: job.args,
      job,
      log: (...parts: unknown[]) => this.log(parts),
      progress: (n: number) => {
        if (typeof n !== 'number' || !Number.isFinite(n)) throw new ValidationError('progress', 'must be a finite number');
        hooks.progress(job, n);
      },
      fanOut: (items: readonly unknown[], options: FanOutOptions) => this.fanOut(items, options),
      children: (page?: { offset?: number; limit?: number }) => {
        const { offset = 0, limit = 100 } = checkOptions(CHILD_PAGE, page, { optional: true });
        return hooks.children(job, offset, limit);
      },
      [CONTEXT_RUN]: this,
    };
    // (a batch's handle, for its jobs and callbacks only: not enumerable, so that an isolated
    // run's context, copied field by field, leaves it out)
    if (hooks.batch && (job.batch !== undefined || job.id.endsWith(BATCH.complete) || job.id.endsWith(BATCH.succeed))) {
      Object.defineProperty(context, 'batch', { value: hooks.batch(job), enumerable: false });
    }
    return Object.defineProperty(context, 'signal', SIGNAL) as unknown as JobContext;
  }

  /** Stores a log line, cut to its limit, while the run's lines are within theirs (./log-limits.ts). */
  private log(parts: unknown[]): void {
    if (this.logBytes > MAX_RUN_LOG_BYTES) return;
    const line = cutLogLine(parts.map(formatPart).join(' '));
    this.logBytes += Buffer.byteLength(line);
    this.hooks.log(this.job, this.logBytes > MAX_RUN_LOG_BYTES ? RUN_LOG_FULL : line);
  }

  private fanOut(items: readonly unknown[], options: FanOutOptions): Promise<void> {
    if (this.fanned) return Promise.reject(new ValidationError('fanOut', 'may be called once per run'));
    const staged = this.hooks.fanOut(this.job, items, options, this.span?.trace);
    this.fanned = staged;
    staged.catch((err: unknown) => {
      // Refused input: nothing was staged, and the handler may call again (this runs before the
      // handler hears of it). Any other failure fails the run when it succeeds.
      if (err instanceof ValidationError && this.fanned === staged) this.fanned = null;
    });
    return staged.then(() => undefined);
  }

  private succeeded(result: unknown): void {
    if (this.abortedFor) {
      this.settle(this.abortedOutcome());
      return;
    }
    if (!this.fanned) {
      this.settle({ code: 's', result });
      return;
    }
    // The children are committed with the success: once they are staged.
    this.fanned.then(
      (n) => this.settle(this.abortedFor ? this.abortedOutcome() : { code: n > 0 ? 'o' : 's', result }),
      (err: unknown) => this.failed(err),
    );
  }

  private failed(err: unknown): void {
    this.settle(this.failedOutcome(err));
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

  /** The message of the abort, if it aborted. */
  get abortMessage(): string | null {
    return this.abortError?.message ?? null;
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
    this.onAbort?.(this.abortError.message);
    this.addTimer(() => {
      const note = this.abandon?.();
      if (note) this.log([`rota: ${note}`]);
      this.settle(this.abortedOutcome(note));
    }, this.graceMs);
  }

  /** Settles the run at once with `outcome` (used to release runs on shutdown). */
  settleNow(outcome: Outcome): void {
    this.settle(outcome);
  }

  /**
   * The first outcome wins; the run's timers stop with it. Its error is cut to its bounds here,
   * once, before anything stores, emits or logs it (./log-limits.ts).
   */
  private settle(outcome: Outcome): void {
    if (this.outcome) return;
    if (outcome.error) outcome.error = cutError(outcome.error);
    this.outcome = outcome;
    if (this.began > 0) this.ranMs = performance.now() - this.began;
    if (this.timers) for (const t of this.timers) clearLongTimeout(t);
    if (this.span) {
      this.span.end(OUTCOME_NAMES[outcome.code], outcome.error);
      this.span = null;
    }
    this.onEnd?.(this, outcome);
    if (this.waiters) for (const w of this.waiters) w(outcome);
  }

  /** Arms a timer the run's end stops; `ms` may be longer than Node's setTimeout takes (a maxRuntime of weeks). */
  private addTimer(fn: () => void, ms: number): void {
    if (this.outcome) return;
    this.timers ??= [];
    this.timers.push(setLongTimeout(fn, ms));
  }

  /** `note`: what ended a handler that ignored its signal (see {@link onAbandon}). */
  private abortedOutcome(note?: string): Outcome {
    const and = note ? `; ${note}` : '';
    switch (this.abortedFor) {
      case 'cancel':
        return { code: 'c' };
      case 'timeout':
        return {
          code: 'p',
          error: new TimeoutError(`timed out: ran longer than its maxRuntime of ${this.job.maxRuntime} ms${and}`),
        };
      case 'shutdown':
        return { code: 'r' };
      default:
        return { code: 'f', error: new Error(`lease lost${and}`) };
    }
  }

  private failedOutcome(err: unknown): Outcome {
    if (this.abortedFor) return this.abortedOutcome();
    const error = err instanceof Error ? err : new Error(formatPart(err));
    return { code: error instanceof PermanentError ? 'p' : 'f', error };
  }
}
