/**
 * Typed task maps: `type Tasks = { send: { to: string } }` names each task and the type of its
 * args, so that `new Queue<Tasks>(...)` checks task names and args at submit and
 * `new Worker<Tasks>(...)` types each handler's args. Without a map both stay untyped.
 */
import type { Handler, Handlers } from './context.js';
import type { Job } from './job.js';
import type { IsUntyped, TaskName } from './task-map.js';
import type { SubmitSpec } from './validate.js';

export type { IsUntyped, TaskName, UntypedTasks } from './task-map.js';

/** A submit of task `K` of map `T`: its name, and args of its type. */
export type TaskSpec<T, K extends TaskName<T> = TaskName<T>> =
  K extends TaskName<T>
    ? Omit<SubmitSpec<T[K]>, 'task' | 'args'> & { task: K } & (undefined extends T[K] ? { args?: T[K] } : { args: T[K] })
    : never;

/** What a submit of task map `T` accepts: any spec when untyped (args of type `A`), else a {@link TaskSpec}. */
export type SubmitOf<T, K extends TaskName<T>, A> = IsUntyped<T> extends true ? SubmitSpec<A> : TaskSpec<T, K>;

/** The job a submit of task map `T` answers: args of type `A` when untyped, else of task `K`'s type. */
export type JobOf<T, K extends TaskName<T>, A> = IsUntyped<T> extends true ? Job<A> : Job<T[K]> & { task: K };

/**
 * An executor's handlers for task map `T`: any handlers when untyped, else handlers of some of
 * its tasks (an executor may run only part of them), each given its task's args, and a fanOut
 * to the map's tasks.
 */
export type HandlersOf<T> = IsUntyped<T> extends true ? Handlers : { [K in TaskName<T>]?: Handler<T[K], unknown, T & object> };
