/**
 * Graceful shutdown on process signals, for executors run as services (the CLI worker uses it).
 */
import { z } from 'zod';
import { bool, checkOptions, DAY_MS, func, type OptionsOf, whole } from '../options.js';
import type { Worker } from './worker.js';

/** Options of {@link installShutdownHandlers}. */
export const SHUTDOWN_OPTIONS = {
  /** How long running jobs may go on after the signal before they are released: 0 to a day; default 30,000 ms. */
  timeout: whole(0, DAY_MS, 'ms').default(30_000),
  /** Signals to handle; default SIGTERM and SIGINT. */
  signals: z
    .array(
      z.custom<NodeJS.Signals>((v) => typeof v === 'string', 'must be signal names'),
      {
        error: 'must be an array of signal names',
      },
    )
    .default(['SIGTERM', 'SIGINT']),
  /** Called once the executors are closed, before the process exits (close other resources here). */
  onClosed: func<() => void | Promise<void>>().optional(),
  /** Exit the process once closed (code 0; 1 when closing failed); default true. */
  exit: bool.default(true),
  /** Where to say what is happening; default console.error. */
  log: func<(message: string) => void>().default(() => (m: string) => console.error(m)),
};

/** Options of {@link installShutdownHandlers}. */
export type ShutdownOptions = OptionsOf<typeof SHUTDOWN_OPTIONS>;

/**
 * On the first SIGTERM/SIGINT: each executor stops taking, lets running jobs finish for up to
 * `timeout` ms, then aborts their signals and releases them to the queue without counting a
 * retry (see {@link Worker.close}); then the process exits. A second signal exits at once
 * (jobs still running are then recovered through their leases).
 * Returns a function that removes the handlers.
 * @throws {@link ValidationError} naming the first bad option; no handler is installed then.
 * @example
 * ```ts
 * installShutdownHandlers(worker, { timeout: 10_000 });
 * ```
 */
export function installShutdownHandlers(workers: Worker | Worker[], options: ShutdownOptions = {}): () => void {
  const opts = checkOptions(SHUTDOWN_OPTIONS, options, { optional: true });
  const list = Array.isArray(workers) ? workers : [workers];
  const { signals, log } = opts;
  let closing = false;
  const handler = (sig: NodeJS.Signals) => {
    if (closing) {
      log(`rota: ${sig} again, exiting now; running jobs will be recovered when their leases expire`);
      process.exit(1);
    }
    closing = true;
    const running = list.reduce((n, w) => n + w.running, 0);
    log(`rota: ${sig} received, closing ${list.length} executor(s) with ${running} running job(s) (timeout ${opts.timeout} ms)`);
    void (async () => {
      let code = 0;
      try {
        await Promise.all(list.map((w) => w.close({ timeout: opts.timeout })));
        await opts.onClosed?.();
      } catch (err) {
        code = 1;
        log(`rota: closing failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      if (opts.exit) process.exit(code);
    })();
  };
  for (const s of signals) process.on(s, handler);
  return () => {
    for (const s of signals) process.off(s, handler);
  };
}
