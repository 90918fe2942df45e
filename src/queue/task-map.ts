/**
 * The base types of typed task maps (./tasks.ts), apart so that the handler types (./context.ts)
 * and the task map types (./tasks.ts) both build on them without importing each other.
 */

import type { Job } from './job.js';
import type { SubmitSpec } from './validate.js';

/** What a queue or executor without a task map accepts: any task name, any args. */
export type UntypedTasks = Record<string, unknown>;

/** The task names of a task map. */
export type TaskName<T> = keyof T & string;

/**
 * Whether `T` is no task map: any string is a task name, or it names none (`object`, what a
 * generic use such as `ConstructorParameters<typeof Worker>` sees).
 */
export type IsUntyped<T> = string extends keyof T ? true : [keyof T] extends [never] ? true : false;

/** A submit of task `K` of map `T`: its name, and args of its type. */
export type TaskSpec<T, K extends TaskName<T> = TaskName<T>> =
  K extends TaskName<T>
    ? Omit<SubmitSpec<T[K]>, 'task' | 'args'> & { task: K } & (undefined extends T[K] ? { args?: T[K] } : { args: T[K] })
    : never;

/** What a submit of task map `T` accepts: any spec when untyped (args of type `A`), else a {@link TaskSpec}. */
export type SubmitOf<T, K extends TaskName<T>, A> = IsUntyped<T> extends true ? SubmitSpec<A> : TaskSpec<T, K>;

/** The job a submit of task map `T` answers: args of type `A` when untyped, else of task `K`'s type. */
export type JobOf<T, K extends TaskName<T>, A> = IsUntyped<T> extends true ? Job<A> : Job<T[K]> & { task: K };
