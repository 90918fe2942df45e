/** What a handler receives, and the handler types. */
import type { Job } from './job.js';

/** The handler's view of its run. */
export interface JobContext<A = unknown> {
  /** The job's arguments. */
  args: A;
  /** The job record as it was taken. */
  job: Job<A>;
  /**
   * Aborts when the run must stop: the job was cancelled, its `maxRuntime` passed, its lease was
   * lost, or the executor is shutting down. A handler that ignores it is abandoned after a grace period.
   */
  signal: AbortSignal;
  /** Stores a log line with the job (shown with the job and in periodic run history). */
  log(...parts: unknown[]): void;
  /** Records progress (a number, e.g. percent). */
  progress(n: number): void;
}

/**
 * A task's code. What it resolves to is stored as the job's result: a value as
 * `SubmitSpec.args` takes, at most `maxResultBytes` packed; any other fails the run for good.
 */
// biome-ignore lint/suspicious/noExplicitAny: `any` lets a handler declare its own args type and still fit `Handlers`.
export type Handler<A = any, R = unknown> = (ctx: JobContext<A>) => Promise<R> | R;

/** Task names mapped to their handlers. */
export type Handlers = Record<string, Handler>;
