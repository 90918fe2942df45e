/** Job commands: submit, jobs, job, cancel, retry. */
import { type Command, InvalidArgumentError } from 'commander';
import { FINAL_STATES, JOB_STATES, type Job, type JobState } from '../../queue/job.js';
import type { CleanOptions, JobTreeNode } from '../../queue/queue.js';
import { MAX_JOBS_LISTED } from '../../queue/reader.js';
import { looksLikeIsoDuration, parseHumanDuration, parseIsoDuration } from '../../timers/duration.js';
import { EXIT_INVALID, EXIT_NOT_FOUND, EXIT_USAGE } from '../exit-codes.js';
import { printMessage } from '../secrets.js';
import { CliError, intOption, iso, printJson, printTable, withQueue } from '../support.js';
import { durationOption } from './durations.js';

function parseArgs(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (err) {
    throw new InvalidArgumentError(`--args must be JSON (${(err as Error).message})`);
  }
}

/** Parses `--at`: an ISO-8601 time (or anything Date.parse reads), as ms since the epoch. */
function parseAt(value: string): number {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError('--at must be a time such as 2026-01-31T09:00:00Z');
  return ms;
}

function parseState(value: string): JobState {
  if (!(JOB_STATES as readonly string[]).includes(value))
    throw new InvalidArgumentError(`expected one of ${JOB_STATES.join(', ')}`);
  return value as JobState;
}

/** A job as printed: without the take sequence, the queue's internal lease token. */
/**
 * Prints a job tree, one job a line, indented by depth: id, task, state, and the children's
 * counts; and, when the tree reaches other queues, the queue of each job there.
 */
function printTree(root: JobTreeNode): void {
  const rows: string[][] = [];
  let elsewhere = false;
  const walk = (n: JobTreeNode, depth: number) => {
    const c = n.job.children;
    const counts = c ? `${c.success + c.failed + c.cancelled + c.removed}/${c.total} ended` : '';
    if (n.queue !== undefined) elsewhere = true;
    rows.push([`${'  '.repeat(depth)}${n.job.id}`, n.job.task, n.job.state, counts, n.queue ?? '']);
    for (const k of n.children ?? []) walk(k, depth + 1);
    if (n.more) rows.push([`${'  '.repeat(depth + 1)}...`, '', '', '', '']);
  };
  walk(root, 0);
  if (elsewhere) printTable(['ID', 'TASK', 'STATE', 'CHILDREN', 'QUEUE'], rows);
  else
    printTable(
      ['ID', 'TASK', 'STATE', 'CHILDREN'],
      rows.map((r) => r.slice(0, 4)),
    );
}

function printable({ takeSeq: _, ...job }: Job): Omit<Job, 'takeSeq'> {
  return job;
}

function parseFinalState(value: string): CleanOptions['state'] {
  if (!FINAL_STATES.has(value as JobState))
    throw new InvalidArgumentError(`expected one of ${[...FINAL_STATES].join(', ')} (a final state)`);
  return value as CleanOptions['state'];
}

function oneLine(s: string | undefined, max = 60): string | undefined {
  if (!s) return undefined;
  const first = s.split('\n')[0];
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}

/** Registers the job commands on `program`. */
export function register(program: Command): void {
  program
    .command('submit')
    .description('submit a job')
    .argument('<task>', 'task name (the handler that runs it)')
    .option('--group <group>', 'tenant group', 'default')
    .option('--args <json>', 'arguments as JSON', parseArgs)
    .option('--priority <p>', 'high or low', 'low')
    .option('--id <id>', 'job id (an existing id returns the existing job)')
    .option('--max-retries <n>', 'retries after failures', intOption('--max-retries', 0, 1000))
    .option('--delay <duration>', 'run no earlier than this long from now: 30s, 5m, PT1H', durationOption('--delay'))
    .option('--at <time>', 'run no earlier than this time (ISO-8601)', parseAt)
    .option('--json', 'print the job as JSON')
    .action(
      async (
        task: string,
        o: {
          group: string;
          args?: unknown;
          priority: string;
          id?: string;
          maxRetries?: number;
          delay?: number;
          at?: number;
        },
        cmd: Command,
      ) =>
        withQueue(cmd, async (queue, g) => {
          // An id that exists answers the existing job (idempotent submit): say so.
          const existed = o.id !== undefined && (await queue.getJob(o.id)) !== null;
          const job = await queue.submit({
            task,
            group: o.group,
            args: o.args,
            priority: o.priority as 'high' | 'low',
            id: o.id,
            maxRetries: o.maxRetries,
            delay: o.delay,
            runAt: o.at,
          });
          if (existed) printMessage(`job ${job.id} already existed (${job.state}); nothing was submitted`);
          if (g.json) printJson(printable(job));
          else process.stdout.write(`${job.id}\n`);
        }),
    );

  program
    .command('jobs')
    .description('list jobs in a state')
    .option('--state <state>', `one of ${JOB_STATES.join(', ')}`, parseState, 'waiting')
    .option('--group <group>', 'only this group')
    .option('--limit <n>', 'at most this many', intOption('--limit', 1, MAX_JOBS_LISTED), 50)
    .option('--json', 'print one JSON object per line')
    .action(async (o: { state: JobState; group?: string; limit: number }, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const jobs = await queue.jobs({ state: o.state, group: o.group, limit: o.limit });
        if (g.json) {
          for (const j of jobs) printJson(printable(j));
          return;
        }
        // (delayed jobs have no executor nor error yet: their due time instead; a job waiting for
        // children, how many of them have ended)
        const delayed = o.state === 'delayed';
        const parents = o.state === 'waiting-children';
        const last = (j: Job) =>
          delayed
            ? [iso(j.runAt)]
            : parents
              ? [j.children ? `${j.children.total - j.children.waiting - j.children.running}/${j.children.total}` : '-']
              : [j.worker, oneLine(j.error)];
        printTable(
          [
            'ID',
            'TASK',
            'GROUP',
            'PRIO',
            'STATE',
            'RETRIES',
            'SUBMITTED',
            ...(delayed ? ['RUN AT'] : parents ? ['CHILDREN ENDED'] : ['WORKER', 'ERROR']),
          ],
          jobs.map((j) => [
            j.id,
            j.task,
            j.group,
            j.priority,
            j.state,
            `${j.retries}/${j.maxRetries}`,
            iso(j.submitted),
            ...last(j),
          ]),
        );
      }),
    );

  program
    .command('job')
    .description('show one job with its logs and error')
    .argument('<id>', 'job id')
    .option('--json', 'print as JSON')
    .option('--tree', 'print the job and its children (a flow, a fan-out), theirs too: id, task, state (at most 1,000 jobs)')
    .action(async (id: string, o: { tree?: boolean }, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        if (o.tree) {
          const tree = await queue.jobTree(id);
          if (!tree) throw new CliError(`no job "${id}" in queue "${queue.name}"`, EXIT_NOT_FOUND);
          if (g.json) {
            printJson(tree);
            return;
          }
          printTree(tree);
          return;
        }
        const job = await queue.getJob(id);
        if (!job)
          throw new CliError(
            `no job "${id}" in queue "${queue.name}" (never submitted, or removed by retention)`,
            EXIT_NOT_FOUND,
          );
        const logs = await queue.jobLogs(id);
        if (g.json) {
          printJson({ ...printable(job), logs });
          return;
        }
        printJob(job, logs);
      }),
    );

  program
    .command('batch')
    .description("show a batch: its state, counts and times, and a page of its jobs' ids and states")
    .argument('<id>', 'batch id (as Queue.openBatch answers it)')
    .option('--json', 'print as JSON')
    .option('--jobs <n>', 'list its first n jobs (at most 1,000)', intOption('--jobs', 1, 1000))
    .option('--offset <n>', 'list its jobs from this one (from 0)', intOption('--offset', 0, Number.MAX_SAFE_INTEGER))
    .action(async (id: string, o: { jobs?: number; offset?: number }, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const status = await queue.batch(id);
        if (!status) throw new CliError(`no batch "${id}" in queue "${queue.name}" (never opened, or expired)`, EXIT_NOT_FOUND);
        const page =
          o.jobs !== undefined || o.offset !== undefined
            ? (await (await queue.reopenBatch(id))?.jobs({ offset: o.offset ?? 0, limit: o.jobs ?? 100 }))?.items
            : undefined;
        if (g.json) {
          printJson(page ? { ...status, jobs: page } : status);
          return;
        }
        const rows: Array<[string, unknown]> = [
          ['id', status.id],
          ['state', status.state],
          ['description', status.description],
          ['total', status.total],
          ['pending', status.pending],
          ['success', status.success],
          ['failed', status.failed],
          ['cancelled', status.cancelled],
          ['opened', iso(status.opened)],
          ['closed', iso(status.closed)],
          ['completed', iso(status.completed)],
          ['succeeded', iso(status.succeeded)],
        ];
        for (const [k, v] of rows) if (v !== undefined && v !== '') process.stdout.write(`${k.padStart(11)}: ${String(v)}\n`);
        if (page) {
          process.stdout.write('\n');
          printTable(
            ['ID', 'STATE'],
            page.map((j) => [j.id, j.state ?? '(removed)']),
          );
        }
      }),
    );

  program
    .command('cancel')
    .description('cancel a job (a running job has its signal aborted)')
    .argument('<id>', 'job id')
    .action(async (id: string, _o: unknown, cmd: Command) =>
      withQueue(cmd, async (queue) => {
        const before = await queue.getJob(id);
        if (!before) throw new CliError(`no job "${id}" in queue "${queue.name}"`, EXIT_NOT_FOUND);
        if (FINAL_STATES.has(before.state))
          throw new CliError(`job ${id} already ended ${before.state}; nothing to cancel`, EXIT_INVALID);
        const state = await queue.cancel(id);
        process.stdout.write(`${id} ${state}\n`);
      }),
    );

  program
    .command('clean')
    .description('remove finished jobs of one state (their records and logs), oldest first')
    .requiredOption('--state <state>', `one of ${[...FINAL_STATES].join(', ')}`, parseFinalState)
    .option(
      '--older-than <duration>',
      'only jobs finished at least this long ago (30m, 12h, 7d, P1D)',
      parseDurationOption('--older-than'),
    )
    .option('--group <group>', 'only this group')
    .option('--limit <n>', 'at most this many', intOption('--limit', 1, Number.MAX_SAFE_INTEGER))
    .action(async (o: { state: CleanOptions['state']; olderThan?: number; group?: string; limit?: number }, cmd: Command) =>
      withQueue(cmd, async (queue) => {
        const n = await queue.clean({ state: o.state, olderThan: o.olderThan, group: o.group, limit: o.limit });
        process.stdout.write(`${n} ${o.state} job${n === 1 ? '' : 's'} removed\n`);
      }),
    );

  program
    .command('retry')
    .description('put a failed or cancelled job back in the queue, or every failed job (--all-failed)')
    .argument('[id]', 'job id')
    .option('--all-failed', 'every failed job (of --group and --task, when given)')
    .option('--group <group>', 'with --all-failed: only this group')
    .option('--task <task>', 'with --all-failed: only this task')
    .action(async (id: string | undefined, o: { allFailed?: boolean; group?: string; task?: string }, cmd: Command) =>
      withQueue(cmd, async (queue) => {
        if (o.allFailed) {
          if (id !== undefined) throw new CliError('give a job id or --all-failed, not both', EXIT_USAGE);
          const n = await queue.retryFailed({ group: o.group, task: o.task });
          process.stdout.write(`${n} failed job${n === 1 ? '' : 's'} put back as waiting\n`);
          return;
        }
        if (id === undefined) throw new CliError('give a job id, or --all-failed', EXIT_USAGE);
        if (o.group !== undefined || o.task !== undefined)
          throw new CliError('--group and --task go with --all-failed', EXIT_USAGE);
        const state = await queue.retry(id);
        if (state === null) throw new CliError(`no job "${id}" in queue "${queue.name}"`, EXIT_NOT_FOUND);
        if (state !== 'waiting')
          throw new CliError(`job ${id} is ${state}; only failed or cancelled jobs can be retried`, EXIT_INVALID);
        process.stdout.write(`${id} waiting\n`);
      }),
    );
}

/** Reads a duration such as `7d`, `12h`, `90s` or `P1D`, in ms. */
function parseDurationOption(name: string) {
  return (value: string): number => {
    try {
      return looksLikeIsoDuration(value) ? parseIsoDuration(value, value, 0) : parseHumanDuration(value, value, 0);
    } catch (err) {
      throw new InvalidArgumentError(`${name}: ${(err as Error).message}`);
    }
  };
}

function printJob(job: Job, logs: string[]): void {
  const rows: Array<[string, unknown]> = [
    ['id', job.id],
    ['task', job.task],
    ['group', job.group],
    ['state', job.state],
    ['priority', job.priority],
    ['retries', `${job.retries}/${job.maxRetries}`],
    ['subject', job.subject || undefined],
    ['submitter', job.submitter || undefined],
    ['submitted', iso(job.submitted)],
    ['started', iso(job.started)],
    ['finished', iso(job.finished)],
    ['due', iso(job.due)],
    ['runAt', iso(job.runAt)],
    ['taken', iso(job.taken)],
    ['worker', job.worker],
    ['tracker', job.tracker],
    ['occurrence', iso(job.occurrence)],
    ['batch', job.batch],
    ['dedup', job.dedupKey === undefined ? undefined : JSON.stringify(job.dedupKey)],
    ['dedupUntil', job.dedupUntil],
    ['dedupEnds', iso(job.dedupExpires)],
    ['progress', job.progress],
    ['args', JSON.stringify(job.args)],
    ['result', job.result === undefined ? undefined : JSON.stringify(job.result)],
  ];
  for (const [k, v] of rows) if (v !== undefined && v !== '') process.stdout.write(`${k.padStart(10)}: ${String(v)}\n`);
  if (job.error) process.stdout.write(`\nerror:\n${job.error}\n`);
  if (logs.length) process.stdout.write(`\nlogs:\n${logs.join('\n')}\n`);
}
