/** `rota worker --tasks ./tasks.js`: runs an executor with the handlers a module exports. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Command, InvalidArgumentError } from 'commander';
import { type IsolatedOptions, isolated, isolatedSpec } from '../../executor/isolated.js';
import { installShutdownHandlers } from '../../executor/shutdown.js';
import { Worker } from '../../executor/worker.js';
import type { HealthServer } from '../../observability/health.js';
import { createLogger } from '../../observability/logger.js';
import type { MetricsServer } from '../../observability/metrics.js';
import type { Handlers } from '../../queue/context.js';
import { Queue } from '../../queue/queue.js';
import { EXIT_INVALID } from '../exit-codes.js';
import { type HealthFlags, type MetricsFlags, serveHealthFlags, serveMetricsFlags, serverFlags } from '../observability-flags.js';
import { CliError, globals, intOption, openTarget, run } from '../support.js';

/** What a tasks file gives: its handlers, and the isolation its `isolate` export asks for. */
export interface TasksModule {
  handlers: Handlers;
  /** `export const isolate = { ocr: 'process', resize: { in: 'thread', max: 2 } }`: tasks of this file to isolate. */
  isolate: Record<string, unknown>;
}

/**
 * Loads handlers: the module's default export (an object of functions) or its named function
 * exports; a task may be `isolated(...)` there (see src/executor/isolated.ts), or named in the
 * module's `isolate` export (`{ task: 'thread' | 'process' | isolated()'s options }`).
 */
export async function loadHandlers(path: string): Promise<TasksModule> {
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
  const isolate = mod.isolate ?? {};
  if (typeof isolate !== 'object' || isolate === null) {
    throw new CliError(
      `${path}: its "isolate" export must map task names to 'thread', 'process' or isolated() options`,
      EXIT_INVALID,
    );
  }
  return { handlers, isolate: isolate as Record<string, unknown> };
}

/** The pool flags: defaults of every isolated task (the options a task's own isolated() call gives win). */
export interface IsolateFlags {
  /** `--isolate task=thread|process`, repeated. */
  isolate?: string[];
  isolateMax?: number;
  isolateJobsEach?: number;
  isolateMemoryLimit?: number;
  isolateRecycleAfter?: number;
  isolateRecycleAbove?: number;
}

/**
 * The handlers with the isolation the flags ask for: each `--isolate task=thread|process` runs
 * that task of the tasks file (its export, loaded by the thread or process) isolated; the pool
 * flags fill in what the tasks' own isolated() options leave out.
 */
export function applyIsolation({ handlers, isolate }: TasksModule, tasksPath: string, flags: IsolateFlags): Handlers {
  const defaults: IsolatedOptions = {
    ...(flags.isolateMax !== undefined ? { max: flags.isolateMax } : {}),
    ...(flags.isolateJobsEach !== undefined ? { jobsEach: flags.isolateJobsEach } : {}),
    ...(flags.isolateMemoryLimit !== undefined ? { memoryLimitMb: flags.isolateMemoryLimit } : {}),
    ...(flags.isolateRecycleAfter !== undefined ? { recycleAfterJobs: flags.isolateRecycleAfter } : {}),
    ...(flags.isolateRecycleAbove !== undefined ? { recycleAboveMb: flags.isolateRecycleAbove } : {}),
  };
  const out: Handlers = { ...handlers };
  const marks: Array<[string, string, unknown]> = Object.entries(isolate).map(([task, how]) => [
    task,
    `${tasksPath}'s isolate.${task}`,
    how,
  ]);
  for (const entry of flags.isolate ?? []) {
    const [task, where] = entry.split('=');
    marks.push([task, `--isolate ${entry}`, where]);
  }
  for (const [task, what, how] of marks) {
    if (!Object.hasOwn(handlers, task)) throw new CliError(`${what}: ${tasksPath} has no task "${task}"`, EXIT_INVALID);
    if (isolatedSpec(out[task])) throw new CliError(`${what}: task "${task}" is isolated already`, EXIT_INVALID);
    try {
      const options = typeof how === 'string' ? { in: how as 'thread' | 'process' } : (how as IsolatedOptions);
      out[task] = isolated(resolve(tasksPath), options);
    } catch (err) {
      throw new CliError(`${what}: ${(err as Error).message}`, EXIT_INVALID);
    }
  }
  for (const [task, h] of Object.entries(out)) {
    const spec = isolatedSpec(h);
    if (!spec) continue;
    const { module, ...own } = spec;
    out[task] = isolated(module, { ...defaults, ...own });
  }
  return out;
}

/** Parses `--isolate task=thread|process`, collecting repeats. */
function isolateFlag(value: string, previous: string[] = []): string[] {
  if (!/^[^=]+=(thread|process)$/.test(value)) {
    throw new InvalidArgumentError('--isolate takes task=thread or task=process');
  }
  return [...previous, value];
}

/** The `--isolate-*` flags that take a whole number: flags, least, most, and what each sets. */
const ISOLATE_NUMBERS: Array<[string, number, number, string]> = [
  [
    '--isolate-max <n>',
    1,
    100_000,
    'most threads or processes per isolated task (default: the cores, or --concurrency / --isolate-jobs-each)',
  ],
  [
    '--isolate-jobs-each <n>',
    1,
    100_000,
    'jobs one isolated thread or process runs at once (default: --concurrency shared among them; 1: a thread or process per job)',
  ],
  ['--isolate-memory-limit <mb>', 16, 1_048_576, 'heap limit of each isolated thread or process, in MB'],
  ['--isolate-recycle-after <jobs>', 1, 1_000_000_000, 'replace an isolated thread or process after this many jobs'],
  ['--isolate-recycle-above <mb>', 1, 1_048_576, 'replace an isolated thread or process after a job left it above this many MB'],
];

/** Registers the `worker` command on `program`. */
export function register(program: Command): void {
  const command = serverFlags(program.command('worker'))
    .description('run an executor; SIGTERM/SIGINT shut it down gracefully')
    .requiredOption('--tasks <module>', 'JavaScript module exporting task handlers')
    .option('--concurrency <n>', 'jobs run at once', intOption('--concurrency', 1, 100_000), 1)
    .option(
      '--isolate <task=thread|process>',
      'run a task of the tasks file in a pool of worker threads or child processes (repeatable)',
      isolateFlag,
    );
  for (const [flags, min, max, description] of ISOLATE_NUMBERS) {
    command.option(flags, description, intOption(flags.split(' ')[0], min, max));
  }
  command
    .option('--id <id>', 'executor id (a fixed id clears its stale marks on restart)')
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
          HealthFlags &
          IsolateFlags & {
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
          const handlers = applyIsolation(await loadHandlers(o.tasks), o.tasks, o);
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
