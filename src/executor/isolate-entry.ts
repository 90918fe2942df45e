/**
 * What runs inside the thread or child process of an isolated task (./isolated.ts): loads the
 * task's module once, then runs the jobs the executor sends (several at once when the task's
 * `jobsEach` allows). Messages each way go in batches, one a turn of the event loop. The context it gives
 * the handler is built from the run message: its data fields as sent (`args`, `job`, ...), a
 * signal the executor aborts, and each context method as a call back to the executor, which
 * answers with the method's value (every such call returns a promise here).
 */
import { getHeapStatistics } from 'node:v8';
import { isMainThread, parentPort } from 'node:worker_threads';
import { PermanentError } from '../errors.js';
import { BATCH_CALL, type FromIsolate, fromWire, type ToIsolate, toWire } from './isolate-protocol.js';

/** Marks a function made by isolated() (the same symbol as in ./isolated.ts, shared by every copy of the package). */
const ISOLATED = Symbol.for('rota.isolated');

const inThread = !isMainThread;
/** Sends at once, unbatched (readiness, a crash before exiting). */
const post = (m: FromIsolate | FromIsolate[], then?: () => void): void => {
  if (inThread) {
    parentPort!.postMessage(m);
    then?.();
  } else if (process.connected) process.send!(m, undefined, undefined, then);
  else then?.();
};

/** Messages of this turn of the event loop, sent in one batch; a message that cannot be cloned is given to its `refused`. */
const outbox: Array<{ m: FromIsolate; refused?: (err: Error) => void }> = [];
function send(m: FromIsolate, refused?: (err: Error) => void): void {
  outbox.push({ m, refused });
  if (outbox.length === 1) setImmediate(flush);
}
function flush(): void {
  const batch = outbox.splice(0);
  // (the memory once a batch, in each run's end: the pool reads it to recycle)
  const mem = memory();
  for (const { m } of batch) if (m.t === 'done') Object.assign(m, mem);
  try {
    post(batch.map((b) => b.m));
  } catch {
    for (const { m, refused } of batch) {
      try {
        post([m]);
      } catch (err) {
        refused?.(err as Error);
      }
    }
  }
}

type Handler = (ctx: Record<string, unknown>) => unknown;
let handler: Handler | null = null;
/** A run's signal, made on first read, and why it aborted. */
interface Aborting {
  controller: AbortController | null;
  reason: Error | null;
}
const controllers = new Map<number, Aborting>();
const calls = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let nextCall = 0;

/** Memory after a run, in MB: the isolate's heap in a thread (the process's RSS is shared), the RSS in a process. */
function memory(): { mb: number; cpuUs?: number } {
  if (inThread) return { mb: getHeapStatistics().used_heap_size / 1_048_576 };
  const cpu = process.cpuUsage();
  return { mb: process.memoryUsage.rss() / 1_048_576, cpuUs: cpu.user + cpu.system };
}

async function load(module: string, task: string, exportName?: string): Promise<void> {
  try {
    const mod = (await import(module)) as Record<string, unknown>;
    const def = mod.default as Record<string, unknown> | undefined;
    const found =
      exportName !== undefined
        ? mod[exportName]
        : typeof def === 'function'
          ? def
          : typeof mod[task] === 'function'
            ? mod[task]
            : typeof def === 'object' && def !== null && Object.hasOwn(def, task)
              ? def[task]
              : undefined;
    if (typeof found !== 'function') {
      const what = exportName !== undefined ? `an export "${exportName}"` : `a default export or an export "${task}"`;
      throw new Error(`${module} has no handler for task "${task}": it needs ${what} that is a function`);
    }
    if ((found as { [ISOLATED]?: unknown })[ISOLATED]) {
      throw new Error(
        `${module}: the handler of task "${task}" is itself isolated(); point isolated() at the handler's own module`,
      );
    }
    handler = found as Handler;
    post({ t: 'ready' });
  } catch (err) {
    post({ t: 'unready', error: toWire(err) });
  }
}

function call(seq: number, method: string, args: unknown[]): Promise<unknown> {
  const id = nextCall++;
  const p = new Promise<unknown>((resolve, reject) => {
    calls.set(id, { resolve, reject });
    send({ t: 'call', seq, call: id, method, args }, (err) => {
      // (arguments that cannot be cloned)
      calls.delete(id);
      reject(err);
    });
  });
  // A handler need not await a call (log, progress): a refusal it does not await is not an unhandled rejection.
  p.catch(() => undefined);
  return p;
}

async function run(seq: number, data: Record<string, unknown>, methods: string[]): Promise<void> {
  // (the signal is made when the handler first reads it: most never do)
  const state: Aborting = { controller: null, reason: null };
  controllers.set(seq, state);
  const ctx: Record<string, unknown> = { ...data };
  Object.defineProperty(ctx, 'signal', {
    get() {
      if (!state.controller) {
        state.controller = new AbortController();
        if (state.reason) state.controller.abort(state.reason);
      }
      return state.controller.signal;
    },
    enumerable: true,
  });
  for (const name of methods) {
    const to = (...args: unknown[]) => call(seq, name, args);
    // (a method of the batch's handle goes on ctx.batch, which the run's data made `{ id }`)
    if (name.startsWith(BATCH_CALL) && ctx.batch && typeof ctx.batch === 'object') {
      (ctx.batch as Record<string, unknown>)[name.slice(BATCH_CALL.length)] = to;
    } else ctx[name] = to;
  }
  let done: FromIsolate;
  try {
    const value = await handler!(ctx);
    done = { t: 'done', seq, ok: true, value, mb: 0 };
  } catch (err) {
    done = { t: 'done', seq, ok: false, error: toWire(err), mb: 0 };
  }
  controllers.delete(seq);
  send(done, (err) => {
    const why = new PermanentError(`the handler's result cannot be sent to the executor: ${err.message}`);
    post([{ t: 'done', seq, ok: false, error: toWire(why), ...memory() }]);
  });
}

function abortError(message: string): Error {
  const e = new Error(message);
  e.name = 'AbortError';
  return e;
}

function onMessage(batch: ToIsolate | ToIsolate[]): void {
  if (Array.isArray(batch)) for (const m of batch) onOne(m);
  else onOne(batch);
}

function onOne(m: ToIsolate): void {
  switch (m.t) {
    case 'init':
      void load(m.module, m.task, m.exportName);
      break;
    case 'run':
      void run(m.seq, m.data, m.methods);
      break;
    case 'abort': {
      const state = controllers.get(m.seq);
      if (state && !state.reason) {
        state.reason = abortError(m.message);
        state.controller?.abort(state.reason);
      }
      break;
    }
    case 'reply': {
      const waiting = calls.get(m.call);
      calls.delete(m.call);
      if (m.ok) waiting?.resolve(m.value);
      else waiting?.reject(fromWire(m.error));
      break;
    }
  }
}

if (inThread) {
  // (an uncaught exception or unhandled rejection ends the thread: the executor hears it as the thread's error event)
  parentPort!.on('message', onMessage);
} else {
  process.on('message', (m) => onMessage(m as ToIsolate[]));
  // The executor decides when this process ends: a signal to the process group (Ctrl-C) lets it drain.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
  // The executor went away: nothing can use what this process does any more.
  process.on('disconnect', () => process.exit(0));
  const crash = (kind: string) => (err: unknown) => post({ t: 'crash', kind, error: toWire(err) }, () => process.exit(1));
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
}
