/** `rota scheduler` (a scheduler replica) and `rota periodic ...` (the periodic task store). */
import { type Command, InvalidArgumentError } from 'commander';
import type { HealthServer } from '../../observability/health.js';
import { createLogger } from '../../observability/logger.js';
import type { PeriodicTask, PeriodicTaskDefinition } from '../../periodic/definition.js';
import { describeControls } from '../../periodic/schedule.js';
import { Scheduler } from '../../periodic/scheduler.js';
import { PeriodicTasks } from '../../periodic/tasks.js';
import { Queue } from '../../queue/queue.js';
import { parseTimer } from '../../timers/index.js';
import { EXIT_NOT_FOUND } from '../exit-codes.js';
import { type HealthFlags, type MetricsFlags, serveHealthFlags, serveMetricsFlags, serverFlags } from '../observability-flags.js';
import { printMessage } from '../secrets.js';
import { CliError, globals, intOption, iso, openClient, openTarget, printJson, printTable, run, shardsOf } from '../support.js';
import { timeFormat } from '../times.js';
import { registerBackfill } from './periodic-backfill.js';

/** What a periodic command reads from the global options. */
interface TasksContext {
  json: boolean;
  queue: string;
  /** Print times in UTC (`--utc`), not in the task's zone. */
  utc: boolean;
}

async function withTasks(cmd: Command, fn: (tasks: PeriodicTasks, ctx: TasksContext) => Promise<void>): Promise<void> {
  const g = globals(cmd);
  await run(async () => {
    const client = await openClient(g);
    try {
      const tasks = new PeriodicTasks(g.queue, { connection: client, shards: await shardsOf(g, client) });
      try {
        await fn(tasks, { json: Boolean(g.json), queue: g.queue, utc: Boolean(g.utc) });
      } finally {
        await tasks.close().catch(() => {});
      }
    } finally {
      client.disconnect();
    }
  });
}

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (err) {
    throw new InvalidArgumentError(`must be JSON (${(err as Error).message})`);
  }
}

/** Warns on stderr when no scheduler replica runs against the queue: nothing would submit the runs. */
async function warnWithoutScheduler(tasks: PeriodicTasks, queue: string): Promise<void> {
  if ((await tasks.schedulers()).length > 0) return;
  printMessage(
    `warning: no scheduler replica is running for queue "${queue}"; the run happens only once one runs (rota scheduler --queue ${queue})`,
  );
}

/** The zone a task's times are read in: its `timezone`, else the zone its timer spec names (else UTC). */
function zoneOf(t: Pick<PeriodicTask, 'timer' | 'timezone'>): string | undefined {
  if (t.timezone) return t.timezone;
  try {
    return parseTimer(Array.isArray(t.timer) ? t.timer[0] : t.timer).timezone;
  } catch {
    return undefined;
  }
}

/** An ISO date-time option read into ms since the epoch. */
function instantOption(name: string) {
  return (value: string): number => {
    const ms = Date.parse(value);
    if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) throw new InvalidArgumentError(`${name} must be an ISO date-time`);
    return ms;
  };
}

/** Collects a repeatable option's values. */
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** A task's timer (or timers) and schedule controls, for the list. */
function timerText(t: PeriodicTask): string {
  const spec = Array.isArray(t.timer) ? t.timer.join(' | ') : t.timer;
  const c = describeControls(t);
  return c.length ? `${spec} (${c.join('; ')})` : spec;
}

function notFound(id: string): CliError {
  return new CliError(`no periodic task "${id}" (see: rota periodic list)`, EXIT_NOT_FOUND);
}

/** Registers `scheduler` and `periodic` on `program`. */
export function register(program: Command): void {
  serverFlags(program.command('scheduler'))
    .description('run a scheduler replica (any number may run; each occurrence is submitted once)')
    .option('--id <id>', 'replica id')
    .action(async (o: MetricsFlags & HealthFlags & { id?: string }, cmd: Command) =>
      run(async () => {
        const g = globals(cmd);
        const target = await openTarget(g);
        const { connection } = target;
        const shards = target.shards[g.queue];
        const log = createLogger({ name: 'rota-scheduler' });
        const scheduler = new Scheduler(g.queue, { connection, id: o.id, shards });
        scheduler.on('error', (err) => log.warn({ err }, 'scheduler error'));
        scheduler.on('fired', (info) => log.debug(info, 'occurrence submitted'));
        scheduler.on('clockJump', (jump) => log.warn(jump, "the Redis server's clock jumped"));
        // (the signal handlers come first: a signal while the replica starts stops it once started,
        // rather than killing the process with its registration left to expire)
        const signalled = new Promise<string>((resolve) => {
          process.once('SIGTERM', resolve);
          process.once('SIGINT', resolve);
        });
        let health: HealthServer | undefined;
        try {
          // (served before the start: a probe sees not-ready meanwhile)
          const { healthPort, metricsPort } = o;
          if (healthPort !== undefined) {
            health = await serveHealthFlags({ ...o, healthPort }, () => scheduler.health());
            log.info({ url: health.url }, 'serving health');
          }
          await scheduler.start();
          log.info({ id: scheduler.id, queue: g.queue }, 'scheduler started');
          const metrics =
            metricsPort === undefined
              ? undefined
              : await serveMetricsFlags(
                  { ...o, metricsPort },
                  {
                    queue: new Queue(g.queue, { connection, shards }),
                    schedulers: [scheduler],
                    onError: (err) => log.warn({ err }, 'a metrics scrape failed'),
                  },
                );
          if (metrics) log.info({ url: metrics.url }, 'serving metrics');
          log.info(`${await signalled} received, stopping`);
          await Promise.all([scheduler.close(), metrics?.close()]);
        } finally {
          await health?.close();
          target.close();
        }
      }),
    );

  program
    .command('schedulers')
    .description('live scheduler replicas: host, pid, start, last beat, claims held, lateness')
    .option('--json', 'print one JSON object per line')
    .action(async (_o: unknown, cmd: Command) =>
      withTasks(cmd, async (tasks, { json, queue }) => {
        const { now, total, replicas } = await tasks.replicas();
        if (json) return replicas.forEach(printJson);
        const ms = (v: number | null) => (v === null ? undefined : `${v} ms`);
        printTable(
          ['ID', 'HOST', 'PID', 'STARTED', 'LAST BEAT', 'CLAIMS', 'CLAIMED', 'RELEASED', 'LATE', 'MAX LATE 1M'],
          replicas.map((r) => [
            r.id,
            r.host ?? undefined,
            r.pid ?? undefined,
            iso(r.started ?? undefined),
            r.lastBeat === null ? undefined : `${Math.max(0, Math.round((now - r.lastBeat) / 1000))}s ago`,
            r.claims ?? undefined,
            r.claimed ?? undefined,
            r.released ?? undefined,
            ms(r.lateMs),
            ms(r.maxLateMs),
          ]),
        );
        if (total > replicas.length) process.stdout.write(`(${replicas.length} of ${total} replicas shown)\n`);
        if (total === 0) printMessage(`no scheduler replica is running for queue "${queue}" (rota scheduler --queue ${queue})`);
      }),
    );

  const periodic = program
    .command('periodic')
    .description('periodic tasks: list, add, remove, enable, disable, trigger, backfill, runs, next');

  periodic
    .command('list')
    .description('all periodic tasks')
    .option('--owner <owner>', 'only tasks of this owner')
    .option('--json', 'print one JSON object per line')
    .action(async (o: { owner?: string }, cmd: Command) =>
      withTasks(cmd, async (tasks, { json, utc }) => {
        const list = await tasks.list({ owner: o.owner });
        if (json) return list.forEach(printJson);
        printTable(
          ['ID', 'TASK', 'TIMER', 'ZONE', 'ENABLED', 'NEXT RUN', 'LAST RUN', 'OVERLAP', 'OWNER', 'NOTE'],
          list.map((t) => {
            const time = timeFormat(zoneOf(t), utc);
            return [
              t.id,
              t.task,
              timerText(t),
              t.timezone,
              t.ended ? 'ended' : t.enabled ? 'yes' : 'no',
              time(t.nextrun),
              time(t.lastrun),
              t.overlap,
              t.owner,
              t.note?.split('\n')[0],
            ];
          }),
        );
      }),
    );

  periodic
    .command('add')
    .description('create or replace a periodic task')
    .argument('<id>', 'task id')
    .argument('<task>', 'handler name')
    .argument('<timer>', 'calendar event, cron rule, interval or due date (quote it)')
    .option('--tz <zone>', 'IANA time zone of the timer')
    .option('--group <group>', 'tenant group of its jobs')
    .option('--args <json>', 'arguments as JSON', parseJson)
    .option('--owner <owner>', "owner (remove all of an owner's tasks at once)")
    .option('--overlap <policy>', 'skip | buffer-one | buffer-all | allow | cancel-previous')
    .option('--catchup <policy>', 'latest | all | none')
    .option('--max-runtime <ms>', 'timebox of each run', intOption('--max-runtime', 1, 2 ** 31))
    .option('--also <timer>', 'another timer: runs at the union of all (repeatable)', collect)
    .option(
      '--exclude <spec>',
      "skip these occurrences: '*-12-25', '2026-12-24..2026-12-26', 'Sun 02:00..04:00' (repeatable)",
      collect,
    )
    .option('--start-at <iso>', 'no occurrence before this date-time', instantOption('--start-at'))
    .option('--end-at <iso>', 'no occurrence after this date-time (then the task has ended)', instantOption('--end-at'))
    .option('--limit <n>', 'at most this many scheduled runs (then the task has ended)', intOption('--limit', 1, 1e9))
    .option('--immediately', 'run once as soon as the task is created')
    .option('--jitter <ms>', 'delay each occurrence by a fixed offset in [0, ms)', intOption('--jitter', 0, 7 * 86_400_000))
    .option('--pause-on-failure', 'disable the task when a run fails for good')
    .option('--disabled', 'create it disabled')
    .option('--json', 'print the stored task as JSON')
    .action(async (id: string, task: string, timer: string, o: Record<string, unknown>, cmd: Command) =>
      withTasks(cmd, async (tasks, { json, queue, utc }) => {
        const also = (o.also as string[] | undefined) ?? [];
        const def = {
          id,
          task,
          timer: also.length ? [timer, ...also] : timer,
          timezone: o.tz,
          group: o.group,
          args: o.args,
          owner: o.owner,
          overlap: o.overlap,
          catchup: o.catchup,
          maxRuntime: o.maxRuntime,
          exclude: o.exclude,
          startAt: o.startAt,
          endAt: o.endAt,
          limit: o.limit,
          immediately: o.immediately ? true : undefined,
          jitter: o.jitter,
          enabled: o.disabled ? false : undefined,
          pauseOnFailure: o.pauseOnFailure ? true : undefined,
        } as PeriodicTaskDefinition;
        for (const k of Object.keys(def) as Array<keyof PeriodicTaskDefinition>) if (def[k] === undefined) delete def[k];
        const stored = await tasks.upsert(def);
        if (stored.enabled && stored.nextrun !== undefined) await warnWithoutScheduler(tasks, queue);
        if (json) printJson(stored);
        else
          process.stdout.write(
            `${stored.id}: next run ${timeFormat(zoneOf(stored), utc)(stored.nextrun) ?? (stored.ended ? 'never (ended)' : 'never')}\n`,
          );
      }),
    );

  for (const [name, what] of [
    ['remove', 'delete a periodic task'],
    ['enable', 'enable a periodic task'],
  ] as const) {
    periodic
      .command(name)
      .description(what)
      .argument('<id>')
      .action(async (id: string, _o: unknown, cmd: Command) =>
        withTasks(cmd, async (tasks, { queue }) => {
          if (!(await tasks[name](id))) throw notFound(id);
          if (name === 'enable') await warnWithoutScheduler(tasks, queue);
          process.stdout.write(`${id} ${name === 'remove' ? 'removed' : `${name}d`}\n`);
        }),
      );
  }

  periodic
    .command('disable')
    .description('disable a periodic task')
    .argument('<id>')
    .option('--note <text>', 'why (shown by list, get and the dashboard until it is enabled)')
    .action(async (id: string, o: { note?: string }, cmd: Command) =>
      withTasks(cmd, async (tasks) => {
        if (!(await tasks.disable(id, { note: o.note }))) throw notFound(id);
        process.stdout.write(`${id} disabled\n`);
      }),
    );

  registerBackfill(periodic, withTasks, notFound);

  periodic
    .command('trigger')
    .description('run a periodic task now, once')
    .argument('<id>')
    .action(async (id: string, _o: unknown, cmd: Command) =>
      withTasks(cmd, async (tasks, { queue }) => {
        const r = await tasks.trigger(id);
        if (!r) throw notFound(id);
        await warnWithoutScheduler(tasks, queue);
        process.stdout.write(`${r.jobId}\n`);
      }),
    );

  periodic
    .command('runs')
    .description('run history of a periodic task, newest first')
    .argument('<id>')
    .option('--limit <n>', 'at most this many', intOption('--limit', 1, 10_000), 20)
    .option('--json', 'print one JSON object per line')
    .action(async (id: string, o: { limit: number }, cmd: Command) =>
      withTasks(cmd, async (tasks, { json, utc }) => {
        // (an event rule's released run leaves its history behind its task)
        const task = await tasks.get(id);
        const runs = await tasks.runs(id, { limit: o.limit });
        if (!task && runs.length === 0) throw notFound(id);
        if (json) return runs.forEach(printJson);
        const time = timeFormat(task ? zoneOf(task) : undefined, utc);
        printTable(
          ['PLANNED', 'DUE', 'STATUS', 'JOB', 'STARTED', 'FINISHED', 'WORKER', 'ERROR'],
          runs.map((r) => [
            time(r.occurrence),
            time(r.due),
            (r.replacedBy === undefined ? r.status : `${r.status} (replaced by ${time(r.replacedBy)})`) +
              (r.backfill ? ' (backfill)' : ''),
            r.jobId,
            time(r.started),
            time(r.finished),
            r.worker,
            r.error?.split('\n')[0],
          ]),
        );
      }),
    );

  periodic
    .command('next')
    .description('what runs next, across all periodic tasks')
    .option('--limit <n>', 'how many occurrences', intOption('--limit', 1, 10_000), 10)
    .option('--json', 'print one JSON object per line')
    .action(async (o: { limit: number }, cmd: Command) =>
      withTasks(cmd, async (tasks, { json, utc }) => {
        const next = await tasks.upcoming({ limit: o.limit });
        if (json) return next.forEach(printJson);
        // each occurrence in its task's zone (an event rule's pending run has none: UTC)
        const zones = new Map<string, string | undefined>();
        for (const n of next) {
          if (zones.has(n.id)) continue;
          const t = await tasks.get(n.id);
          zones.set(n.id, t ? zoneOf(t) : undefined);
        }
        const now = Date.now();
        printTable(
          ['WHEN', 'IN', 'ID', 'TASK', 'GROUP'],
          next.map((n) => [
            timeFormat(zones.get(n.id), utc)(n.occurrence),
            `${Math.max(0, Math.round((n.occurrence - now) / 1000))}s`,
            n.id,
            n.task,
            n.group,
          ]),
        );
      }),
    );
}
