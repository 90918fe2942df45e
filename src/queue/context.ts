/** What a handler receives, and the handler types. */
import type { ValidationError } from '../errors.js';
import type { Batch } from './batch.js';
import type { FanOutOptions } from './fanout.js';
import type { ChildCounts, Job, JobState } from './job.js';
import type { IsUntyped, TaskName, UntypedTasks } from './task-map.js';

/**
 * The handler's view of its run. `A`: its args; `T`: the executor's task map, which types the
 * tasks and items of {@link JobContext.fanOut} (any, without one).
 */
export interface JobContext<A = unknown, T extends object = UntypedTasks> {
  /** The job's arguments. */
  args: A;
  /** The job record as it was taken. */
  job: Job<A>;
  /**
   * Aborts when the run must stop: the job was cancelled, its `maxRuntime` passed, its lease was
   * lost, or the executor is shutting down. A handler that ignores it is abandoned after a grace period.
   */
  signal: AbortSignal;
  /**
   * Stores a log line with the job (shown with the job and in periodic run history). A line is
   * cut at 8 KiB, a run stores at most 1 MiB of lines and a job its newest 1,000 (docs/jobs.md#limits).
   */
  log(...parts: unknown[]): void;
  /**
   * Records progress (a finite number, e.g. percent). Updates are throttled by the executor (see
   * `WorkerOptions.progressIntervalMs`): the first goes at once, later ones at most once an
   * interval, the last one always. Each one written is a `progress` event of the executor and of
   * `Queue.events()`, and the job's `progress` field.
   */
  progress(n: number): void;
  /**
   * Fans out: one child job per item (the item is its args), run by `options.task`, with id
   * `<this job's id>/<index>`. The children are submitted with this run's success, atomically:
   * a run that fails, is cancelled or whose executor dies submits none, and a run again submits
   * the same ids, so no child is lost or doubled. Resolves once they are staged; the handler should
   * await it before returning (its success waits for it anyway). Once per run; at most 100,000 items.
   * `Queue.getJob(id).children` then counts them by state, and a `children.ended` event fires
   * when the last one ends.
   * Rejects with a FanOutLimitError past 100,000 items, or a {@link ValidationError} naming a bad
   * option or item (`items[3]`); nothing is written then, and the handler may call again.
   */
  fanOut: FanOut<T>;
  /**
   * Reads the children this job waited for, a page at a time (`offset` from 0, `limit` 1 to
   * 1,000, default 100), with their counts: a flow's parent reads its own, a chain's step the step
   * before it (one child), a fan-out's continuation (`after`) those of the job that fanned out.
   * Children removed by retention are absent from `items`.
   * @throws {@link ValidationError} naming a bad option.
   */
  children<R = unknown>(page?: { offset?: number; limit?: number }): Promise<ChildPage<R>>;
  /**
   * The batch of this job (docs/jobs.md#batches): for a job of a batch, a handle that adds jobs to
   * it even after its close (while this run holds its lease); for a batch's callback, one that
   * reads the batch's status and pages its jobs. Undefined for any other job. In an isolated task
   * its `id` and its methods, whose calls the executor makes.
   */
  batch?: Batch<T>;
}

/** A page of a job's children ({@link JobContext.children}). */
export interface ChildPage<R = unknown> {
  /** The children's counts by state; null when the job has no children. */
  counts: ChildCounts | null;
  /** The children of the page, in index order. */
  items: Array<{ id: string; state: JobState; result?: R; error?: string }>;
}

/**
 * {@link JobContext.fanOut} of an executor with task map `T`: without one, any task and items;
 * with one, a task it names, and items of that task's args type.
 */
export type FanOut<T> =
  IsUntyped<T> extends true
    ? (items: readonly unknown[], options: FanOutOptions) => Promise<void>
    : <K extends TaskName<T>>(items: readonly T[K][], options: FanOutOptions & { task: K }) => Promise<void>;

/**
 * A task's code (`T`: the executor's task map, when it has one). What it resolves to is stored as the job's result: a value as
 * `SubmitSpec.args` takes, at most `maxResultBytes` packed; any other fails the run for good.
 */
// biome-ignore lint/suspicious/noExplicitAny: `any` lets a handler declare its own args type and still fit `Handlers`.
export type Handler<A = any, R = unknown, T extends object = UntypedTasks> = (ctx: JobContext<A, T>) => Promise<R> | R;

/** Task names mapped to their handlers. */
export type Handlers = Record<string, Handler>;
