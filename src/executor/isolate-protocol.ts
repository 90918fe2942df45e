/**
 * The messages an executor and the thread or process of an isolated task exchange (structured
 * clone both ways: postMessage, or the IPC channel's `advanced` serialization), and how errors
 * cross it. The main side keeps the lease and all Redis; the isolated side only runs the handler
 * and asks the main side to run the context's methods (`log`, `progress`, `fanOut`, and any
 * method a context gains: they are named in each run message, not listed here). A batch's
 * handle (`ctx.batch`) crosses as its id (data `batch: { id }`) and its methods as calls named
 * `batch.<method>`.
 */
import { PermanentError } from '../errors.js';
import { cutError } from './log-limits.js';

/** The prefix of a call to a method of the context's batch handle (`ctx.batch`). */
export const BATCH_CALL = 'batch.';

/** The methods of `ctx.batch` an isolated handler may call (those of the Batch handle). */
export const BATCH_METHODS: readonly string[] = ['submit', 'submitBulk', 'close', 'status', 'jobs'];

/** An error as it crosses the channel: its class name, message, stack, and whether it is permanent. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  permanent: boolean;
  field?: string;
}

/** Main → isolated side. */
export type ToIsolate =
  /** The first message: load the module and find the task's handler. */
  | { t: 'init'; module: string; exportName?: string; task: string }
  /** Run a job: the context's data fields, and the names of its methods. */
  | { t: 'run'; seq: number; data: Record<string, unknown>; methods: string[] }
  /** The run's signal aborted on the main side. */
  | { t: 'abort'; seq: number; message: string }
  /** The answer to a context method call. */
  | { t: 'reply'; call: number; ok: true; value: unknown }
  | { t: 'reply'; call: number; ok: false; error: WireError };

/** Isolated side → main. */
export type FromIsolate =
  | { t: 'ready' }
  /** The module could not be loaded, or has no handler for the task. */
  | { t: 'unready'; error: WireError }
  /** A context method call of run `seq`. */
  | { t: 'call'; seq: number; call: number; method: string; args: unknown[] }
  /** Run `seq` ended; `mb`: the side's memory after it (heap used in a thread, RSS in a process), `cpuUs` a process's CPU so far. */
  | { t: 'done'; seq: number; ok: true; value: unknown; mb: number; cpuUs?: number }
  | { t: 'done'; seq: number; ok: false; error: WireError; mb: number; cpuUs?: number }
  /** An uncaught exception or unhandled rejection: the side exits next. */
  | { t: 'crash'; kind: string; error: WireError };

/** `err` (any thrown value) as it crosses, its message and stack cut to the size limit. */
export function toWire(err: unknown): WireError {
  const e = cutError(err instanceof Error ? err : new Error(typeof err === 'string' ? err : safeString(err)));
  const field = (e as { field?: unknown }).field;
  return {
    name: String(e.name),
    message: String(e.message),
    stack: typeof e.stack === 'string' ? e.stack : undefined,
    permanent: e instanceof PermanentError || (e as { permanent?: unknown }).permanent === true,
    ...(typeof field === 'string' ? { field } : {}),
  };
}

function safeString(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** The error a {@link WireError} stands for: a PermanentError when it was one, with its name, message and stack. */
export function fromWire(w: WireError): Error {
  const e = w.permanent ? new PermanentError(w.message) : new Error(w.message);
  e.name = w.name;
  if (w.stack !== undefined) e.stack = w.stack;
  if (w.field !== undefined) Object.defineProperty(e, 'field', { value: w.field, enumerable: true });
  return e;
}
