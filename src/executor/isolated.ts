/**
 * Isolated tasks: `isolated(module, options)` stands for a handler that runs in a pool of worker
 * threads or child processes instead of on the executor's event loop. The executor keeps the
 * lease, the heartbeat, cancellation and every Redis call on its main thread; the thread or
 * process only runs the handler (./isolate-entry.ts). See docs/jobs.md, "Isolated tasks".
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { checkOptions, HOUR_MS, MAX_CONCURRENCY, type OptionsOf, text, whole } from '../options.js';
import type { Handler } from '../queue/context.js';
import type { UntypedTasks } from '../queue/task-map.js';
import type { IsolateIn } from './isolate-member.js';

/** Options of {@link isolated}. */
export const ISOLATED_OPTIONS = {
  /**
   * `'thread'` (default): a worker thread, cheap to start and to talk to, with its own heap
   * limit; a native crash still ends the whole executor. `'process'`: a child process, which
   * survives anything the handler does (a native crash, `process.abort()`, kill -9) at the cost
   * of a Node process each.
   */
  in: z.enum(['thread', 'process'], { error: `must be 'thread' or 'process'` }).default('thread'),
  /** The export that is the handler; default: the module's default export when it is a function, else its export named after the task (or the default export object's). */
  export: text(200).optional(),
  /**
   * Most threads or processes of the task (1 to 100,000; at most the executor's `concurrency`).
   * Default: as many as the machine has cores (`os.availableParallelism()`), or, with `jobsEach`
   * given, `concurrency / jobsEach`.
   */
  max: whole(1, MAX_CONCURRENCY).optional(),
  /**
   * Jobs one thread or process runs at once (1 to 100,000). Default: the executor's
   * `concurrency` shared among the `max` threads or processes (100 at concurrency 100 on two
   * cores: 2 threads of 50 jobs each). Several jobs at once suit async handlers and cost far
   * less than a thread each; leases hold either way (heartbeats are the executor's), but the
   * jobs of one thread or process share its event loop, its memory limit and its fate: a crash,
   * or a job that ignores its aborted signal past the grace, fails the others running there too.
   * `jobsEach: 1` gives each job its own (and `concurrency` of them).
   */
  jobsEach: whole(1, MAX_CONCURRENCY).optional(),
  /** Threads or processes started with the executor (0 to `max`); default 1, so a module that cannot load shows in `health()` at once. */
  min: whole(0, MAX_CONCURRENCY).optional(),
  /** Heap limit of each thread or process, in MB (16 to 1,048,576): a thread's `resourceLimits.maxOldGenerationSizeMb`, a process's `--max-old-space-size`. Past it the run fails, the thread or process is replaced. Default: Node's. */
  memoryLimitMb: whole(16, 1_048_576, 'MB').optional(),
  /** Replace a thread or process after this many jobs (1 to 10^9); default never. */
  recycleAfterJobs: whole(1, 1_000_000_000).optional(),
  /** Replace a thread or process after a job that left it above this many MB (a thread's heap used, a process's RSS): 1 to 1,048,576; default never. */
  recycleAboveMb: whole(1, 1_048_576, 'MB').optional(),
  /** How long a thread or process may take to load the module (100 ms to an hour); default 30,000. */
  startTimeoutMs: whole(100, HOUR_MS, 'ms').optional(),
};

/** Options of {@link isolated}. */
export type IsolatedOptions = OptionsOf<typeof ISOLATED_OPTIONS>;

/** An isolated task as the executor reads it. */
export interface IsolatedSpec extends IsolatedOptions {
  /** The module's file URL. */
  module: string;
  in: IsolateIn;
}

/** Marks a function made by isolated(); a registered symbol, so that every copy of the package knows it. */
const ISOLATED = Symbol.for('rota.isolated');

/**
 * A handler that runs in a pool of worker threads (`in: 'thread'`, the default) or child
 * processes (`in: 'process'`): `module` exports the handler as an in-process task would (its
 * default export, or an export named after the task). Its context crosses over: `args`, `job`,
 * `signal` (cancel, timebox, lost lease, shutdown), `log`, `progress`, `fanOut` (each of them
 * returns a promise there), its result and its thrown errors (a `PermanentError` stays
 * permanent). A handler that ignores its aborted signal is ended with its thread or process
 * after the executor's `graceMs`; a crash, an exit or running out of memory fails only that
 * attempt, and the thread or process is replaced.
 * @param module - a `URL` (`new URL('./ocr.js', import.meta.url)`), a `file:` URL, or a path
 * (relative to the working directory).
 * @throws {@link ValidationError} naming the first bad option.
 * @example
 * ```ts
 * new Worker('docs', { ocr: isolated(new URL('./ocr.js', import.meta.url), { in: 'process', memoryLimitMb: 512 }) }, { connection });
 * ```
 */
// biome-ignore lint/suspicious/noExplicitAny: `any` lets the handler take the args type of the task it is given to, as a plain handler does.
export function isolated<A = any, T extends object = UntypedTasks>(
  module: URL | string,
  options: IsolatedOptions = {},
): Handler<A, unknown, T> {
  const opts = checkOptions(ISOLATED_OPTIONS, options, { optional: true });
  if (opts.min !== undefined && opts.max !== undefined && opts.min > opts.max) {
    throw new ValidationError('min', `must be at most max (${opts.max})`);
  }
  const spec: IsolatedSpec = { ...opts, module: moduleUrl(module) };
  const handler = () => {
    throw new ValidationError('handler', 'an isolated() handler runs only in an executor (new Worker)');
  };
  Object.defineProperty(handler, ISOLATED, { value: Object.freeze(spec) });
  return handler;
}

function moduleUrl(module: URL | string): string {
  if (module instanceof URL) {
    if (module.protocol !== 'file:') throw new ValidationError('module', 'must be a file: URL');
    return module.href;
  }
  if (typeof module !== 'string' || module === '') throw new ValidationError('module', 'must be a URL or a path');
  if (module.startsWith('file:')) return new URL(module).href;
  return pathToFileURL(isAbsolute(module) ? module : resolve(module)).href;
}

/** The isolated task `handler` stands for, or undefined for an in-process handler. */
export function isolatedSpec(handler: unknown): IsolatedSpec | undefined {
  return typeof handler === 'function' ? (handler as { [ISOLATED]?: IsolatedSpec })[ISOLATED] : undefined;
}
