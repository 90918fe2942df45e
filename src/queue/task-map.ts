/**
 * The base types of typed task maps (./tasks.ts), apart so that the handler types (./context.ts)
 * and the task map types (./tasks.ts) both build on them without importing each other.
 */

/** What a queue or executor without a task map accepts: any task name, any args. */
export type UntypedTasks = Record<string, unknown>;

/** The task names of a task map. */
export type TaskName<T> = keyof T & string;

/**
 * Whether `T` is no task map: any string is a task name, or it names none (`object`, what a
 * generic use such as `ConstructorParameters<typeof Worker>` sees).
 */
export type IsUntyped<T> = string extends keyof T ? true : [keyof T] extends [never] ? true : false;
