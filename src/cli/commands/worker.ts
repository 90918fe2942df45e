/** `rota worker --tasks ./tasks.js`: runs an executor with the handlers a module exports. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { installShutdownHandlers } from '../../executor/shutdown.js';
import { Worker } from '../../executor/worker.js';
import type { HealthServer } from '../../observability/health.js';
import { createLogger } from '../../observability/logger.js';
import type { MetricsServer } from '../../observability/metrics.js';
import type { Handlers } from '../../queue/context.js';
import { Queue } from '../../queue/queue.js';
import { EXIT_INVALID } from '../exit-codes.js';
import {
  type HealthFlags,
  healthHostOption,
  type MetricsFlags,
  metricsGroupsOption,
  metricsHostOption,
  metricsSweepIntervalOption,
  serveHealthFlags,
  serveMetricsFlags,
} from '../observability-flags.js';
import { CliError, globals, intOption, openTarget, run } from '../support.js';

/** Loads handlers: the module's default export (an object of functions) or its named function exports. */
export async function loadHandlers(path: string): Promise<Handlers> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  } catch (err) {
    throw new CliError(`cannot load tasks from ${path}: ${(err as Error).message}`, EXIT_INVALID);
  }
  const source = (typeof mod.default === 'object' && mod.default !== null ? mod.default : mod) as Record<string, unknown>;
  const handlers: Handlers = {};
  for (const [name, fn] of Object.entries(source)) if (typeof fn === 'function') handlers[name] = fn as Handlers[string];
  if (Object.keys(handlers).length === 0) {
    throw new CliError(
      `${path} exports no task handlers (export an object of async functions as default, or named functions)`,
      EXIT_INVALID,
    );
  }
  return handlers;
}

/** Registers the `worker` command on `program`. */
export function register(program: Command): void {
  program
    .command('worker')
    .description('run an executor; SIGTERM/SIGINT shut it down gracefully')
    .requiredOption('--tasks <module>', 'JavaScript module exporting task handlers')
    .option('--concurrency <n>', 'jobs run at once', intOption('--concurrency', 1, 100_000), 1)
    .option('--id <id>', 'executor id (a fixed id clears its stale marks on restart)')
    .option('--metrics-port <port>', 'serve Prometheus metrics on this port', intOption('--metrics-port', 0, 65535))
    .addOption(metricsHostOption())
    .addOption(metricsGroupsOption())
    .addOption(metricsSweepIntervalOption())
    .option('--health-port <port>', 'serve /readyz and /livez on this port', intOption('--health-port', 0, 65535))
    .addOption(healthHostOption())
    .option(
      '--stall-after <ms>',
      '/livez fails when the take loop makes no progress this long (default 120000)',
      intOption('--stall-after', 1000, 86_400_000),
    )
    .option(
      '--shutdown-timeout <ms>',
      'how long running jobs may finish on shutdown',
      intOption('--shutdown-timeout', 0, 86_400_000),
      30_000,
    )
    .action(
      async (
        o: MetricsFlags &
          HealthFlags & {
            tasks: string;
            concurrency: number;
            id?: string;
            shutdownTimeout: number;
            stallAfter?: number;
          },
        cmd: Command,
      ) =>
        run(async () => {
          const g = globals(cmd);
          const handlers = await loadHandlers(o.tasks);
          const target = await openTarget(g);
          const { connection } = target;
          const shards = target.shards[g.queue];
          let health: HealthServer | undefined;
          try {
            const log = createLogger({ name: 'rota-worker' });
            const worker = new Worker(g.queue, handlers, {
              connection,
              concurrency: o.concurrency,
              id: o.id,
              logger: log,
              shards,
              stallAfterMs: o.stallAfter,
            });
            worker.on('error', (err) => log.warn({ err }, 'executor error'));
            // (served before the start-up, which waits for Redis: a probe sees not-ready meanwhile)
            const { healthPort, metricsPort } = o;
            if (healthPort !== undefined) {
              health = await serveHealthFlags({ ...o, healthPort }, () => worker.health());
              log.info({ url: health.url }, 'serving health');
            }
            await worker.run();
            log.info(
              { id: worker.id, queue: g.queue, shards, concurrency: o.concurrency, tasks: Object.keys(handlers) },
              'executor started',
            );
            let metrics: MetricsServer | undefined;
            if (metricsPort !== undefined) {
              metrics = await serveMetricsFlags(
                { ...o, metricsPort },
                {
                  queue: new Queue(g.queue, { connection, shards }),
                  workers: [worker],
                  onError: (err) => log.warn({ err }, 'a metrics scrape failed'),
                },
              );
              log.info({ url: metrics.url }, 'serving metrics');
            }
            installShutdownHandlers(worker, {
              timeout: o.shutdownTimeout,
              log: (m) => log.info(m),
              onClosed: async () => {
                await Promise.all([metrics?.close(), health?.close()]);
                target.close();
              },
            });
          } catch (err) {
            await health?.close();
            target.close();
            throw err;
          }
          await new Promise(() => {});
        }),
    );
}
