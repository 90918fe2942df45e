/**
 * What runs inside the thread or child process of an isolated task (./isolated.ts): loads the
 * task's module once, then runs one job at a time as the executor asks. The context it gives
 * the handler is built from the run message: its data fields as sent (`args`, `job`, ...), a
 * signal the executor aborts, and each context method as a call back to the executor, which
 * answers with the method's value (every such call returns a promise here).
 */
import { getHeapStatistics } from 'node:v8';
import { isMainThread, parentPort } from 'node:worker_threads';
import { PermanentError } from '../errors.js';
import { type FromIsolate, fromWire, type ToIsolate, toWire } from './isolate-protocol.js';

/** Marks a function made by isolated() (the same symbol as in ./isolated.ts, shared by every copy of the package). */
const ISOLATED = Symbol.for('rota.isolated');

const inThread = !isMainThread;
const post = (m: FromIsolate, then?: () => void): void => {
  if (inThread) {
    parentPort!.postMessage(m);
    then?.();
  } else if (process.connected) process.send!(m, undefined, undefined, then);
  else then?.();
};

type Handler = (ctx: Record<string, unknown>) => unknown;
let handler: Handler | null = null;
const controllers = new Map<number, AbortController>();
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
    try {
      post({ t: 'call', seq, call: id, method, args });
    } catch (err) {
      // (arguments that cannot be cloned)
      calls.delete(id);
      reject(err);
    }
  });
  // A handler need not await a call (log, progress): a refusal it does not await is not an unhandled rejection.
  p.catch(() => undefined);
  return p;
}

async function run(seq: number, data: Record<string, unknown>, methods: string[]): Promise<void> {
  const controller = new AbortController();
  controllers.set(seq, controller);
  const ctx: Record<string, unknown> = { ...data, signal: controller.signal };
  for (const name of methods) ctx[name] = (...args: unknown[]) => call(seq, name, args);
  let done: FromIsolate;
  try {
    const value = await handler!(ctx);
    done = { t: 'done', seq, ok: true, value, ...memory() };
  } catch (err) {
    done = { t: 'done', seq, ok: false, error: toWire(err), ...memory() };
  }
  controllers.delete(seq);
  try {
    post(done);
  } catch (err) {
    const why = new PermanentError(`the handler's result cannot be sent to the executor: ${(err as Error).message}`);
    post({ t: 'done', seq, ok: false, error: toWire(why), ...memory() });
  }
}

function abortError(message: string): Error {
  const e = new Error(message);
  e.name = 'AbortError';
  return e;
}

function onMessage(m: ToIsolate): void {
  switch (m.t) {
    case 'init':
      void load(m.module, m.task, m.exportName);
      break;
    case 'run':
      void run(m.seq, m.data, m.methods);
      break;
    case 'abort':
      controllers.get(m.seq)?.abort(abortError(m.message));
      break;
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
  process.on('message', (m) => onMessage(m as ToIsolate));
  // The executor decides when this process ends: a signal to the process group (Ctrl-C) lets it drain.
  process.on('SIGINT', () => undefined);
  process.on('SIGTERM', () => undefined);
  // The executor went away: nothing can use what this process does any more.
  process.on('disconnect', () => process.exit(0));
  const crash = (kind: string) => (err: unknown) => post({ t: 'crash', kind, error: toWire(err) }, () => process.exit(1));
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled rejection'));
}
