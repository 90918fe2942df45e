/**
 * Typed task maps: `type Tasks = { send: { to: string } }` names each task and the type of its
 * args, so that `new Queue<Tasks>(...)` checks task names and args at submit and
 * `new Worker<Tasks>(...)` types each handler's args. Without a map both stay untyped.
 */
import type { Handler, Handlers } from './context.js';
import type { IsUntyped, TaskName } from './task-map.js';

export type { IsUntyped, JobOf, SubmitOf, TaskName, TaskSpec, UntypedTasks } from './task-map.js';

/**
 * An executor's handlers for task map `T`: any handlers when untyped, else handlers of some of
 * its tasks (an executor may run only part of them), each given its task's args, and a fanOut
 * to the map's tasks.
 */
export type HandlersOf<T> = IsUntyped<T> extends true ? Handlers : { [K in TaskName<T>]?: Handler<T[K], unknown, T & object> };
