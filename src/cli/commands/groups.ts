/** Group commands: groups, pause-group, resume-group, group-limit; and workers, stats. */
import type { Command } from 'commander';
import type { Queue } from '../../queue/queue.js';
import type { GroupInfo } from '../../queue/reader.js';
import { formatDuration } from '../../timers/duration.js';
import { EXIT_NOT_FOUND } from '../exit-codes.js';
import { CliError, intOption, printJson, printTable, withQueue } from '../support.js';
import { rateOption } from './durations.js';

/** The group named `group` as `rota groups` lists it, or null: no jobs and no settings of its own. */
async function findGroup(queue: Queue, group: string): Promise<GroupInfo | null> {
  return (await queue.groups()).find((g) => g.group === group) ?? null;
}

function noGroup(queue: Queue, group: string, hint: string): CliError {
  return new CliError(
    `no group "${group}" in queue "${queue.name}" (no jobs, no settings; see: rota groups)${hint}`,
    EXIT_NOT_FOUND,
  );
}

/** A group's settings in one line. */
function describeGroup(g: GroupInfo): string {
  return `group ${g.group}: concurrency ${g.limit || 'none'}, weight ${g.weight}, rate ${formatRate(g.rate)}, ${g.paused ? 'paused' : 'not paused'}; ${g.waiting} waiting, ${g.running} running, ${g.stuck} stuck`;
}

/** A rate limit as the options take it (`10/1s`), or `none`. */
function formatRate(rate: GroupInfo['rate']): string {
  return rate ? `${rate.max}/${formatDuration(rate.perMs)}` : 'none';
}

/** Registers the group, executor and stats commands on `program`. */
/** Job ids a `rota workers` row lists at most (`--json` lists all it read). */
const JOBS_SHOWN = 3;

/** The first job ids of an executor's row, and how many more it holds. */
function jobList(jobs: string[], running: number): string | undefined {
  if (running === 0) return undefined;
  const more = running - Math.min(jobs.length, JOBS_SHOWN);
  return [...jobs.slice(0, JOBS_SHOWN), ...(more > 0 ? [`+${more} more`] : [])].join(', ');
}

export function register(program: Command): void {
  program
    .command('groups')
    .description('per group: depth, running, stuck, paused, limit, weight, rate')
    .option('--json', 'print one JSON object per line')
    .action(async (_o: unknown, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const groups = await queue.groups();
        if (g.json) return groups.forEach(printJson);
        printTable(
          ['GROUP', 'WAITING', 'RUNNING', 'STUCK', 'PAUSED', 'LIMIT', 'WEIGHT', 'RATE'],
          groups.map((x) => [
            x.group,
            x.waiting,
            x.running,
            x.stuck,
            x.paused ? 'yes' : 'no',
            x.limit || 'none',
            x.weight,
            formatRate(x.rate),
          ]),
        );
      }),
    );

  program
    .command('pause-group')
    .description("stop handing out a group's jobs (running ones go on)")
    .argument('<group>')
    .option('--create', 'pause a group that has no jobs yet (its jobs will wait when they come)')
    .action(async (group: string, o: { create?: boolean }, cmd: Command) =>
      withQueue(cmd, async (queue) => {
        if (!o.create && !(await findGroup(queue, group))) throw noGroup(queue, group, '; --create pauses it ahead of its jobs');
        await queue.pauseGroup(group);
        process.stdout.write(`group ${group} paused\n`);
      }),
    );

  program
    .command('resume-group')
    .description("hand out a paused group's jobs again")
    .argument('<group>')
    .action(async (group: string, _o: unknown, cmd: Command) =>
      withQueue(cmd, async (queue) => {
        if (!(await findGroup(queue, group))) throw noGroup(queue, group, '');
        await queue.resumeGroup(group);
        process.stdout.write(`group ${group} resumed\n`);
      }),
    );

  program
    .command('group-limit')
    .description("set a group's concurrency limit (0: none), round-robin weight and rate limit; with no option, show them")
    .argument('<group>')
    .option(
      '--concurrency <n>',
      'jobs of the group running at once, across all executors',
      intOption('--concurrency', 0, 1_000_000),
    )
    .option('--weight <n>', 'turns per round-robin round', intOption('--weight', 1, 1000))
    .option(
      '--rate <max/per>',
      'at most max starts in any window of per, across all executors: 10/1s, 600/1h; none lifts it',
      rateOption('--rate'),
    )
    .option('--json', 'show the group as JSON')
    .action(
      async (
        group: string,
        o: { concurrency?: number; weight?: number; rate?: { max: number; perMs: number } | 'none'; json?: boolean },
        cmd: Command,
      ) =>
        withQueue(cmd, async (queue) => {
          const { json, ...settings } = o;
          // Every option but --json is a setting: with none given, show the group's current ones.
          if (Object.values(settings).every((v) => v === undefined)) {
            const found = await findGroup(queue, group);
            if (!found) throw noGroup(queue, group, '');
            process.stdout.write(json ? `${JSON.stringify(found)}\n` : `${describeGroup(found)}\n`);
            return;
          }
          await queue.setGroupLimit(group, { ...settings, rate: settings.rate === 'none' ? null : settings.rate });
          // (what was set, as the options say it)
          const set = [
            settings.concurrency !== undefined ? `concurrency ${settings.concurrency || 'none'}` : '',
            settings.weight !== undefined ? `weight ${settings.weight}` : '',
            settings.rate !== undefined ? `rate ${settings.rate === 'none' ? 'none' : formatRate(settings.rate)}` : '',
          ].filter(Boolean);
          process.stdout.write(`group ${group}: ${set.join(', ')}\n`);
        }),
    );

  program
    .command('workers')
    .description('live executors and the jobs each holds now')
    .option('--json', 'print one JSON object per line')
    .action(async (_o: unknown, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const workers = await queue.workers();
        if (g.json) return workers.forEach(printJson);
        printTable(
          ['ID', 'HOST', 'PID', 'STARTED', 'CONCURRENCY', 'RUNNING', 'JOBS'],
          workers.map((w) => [
            w.id,
            w.host,
            w.pid,
            new Date(w.started).toISOString(),
            w.concurrency,
            w.running,
            jobList(w.jobs, w.running),
          ]),
        );
      }),
    );

  program
    .command('stats')
    .description('jobs per state, throughput and waits of the last minute')
    .option('--json', 'print as JSON')
    .action(async (_o: unknown, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const s = await queue.stats();
        if (g.json) return printJson(s);
        printTable(['STATE', 'JOBS'], Object.entries(s.counts));
        process.stdout.write(
          `\nlast minute: ${s.finished.success} succeeded, ${s.finished.failed} failed, ${s.finished.cancelled} cancelled (${s.perSecond.toFixed(1)}/s)\n`,
        );
        const w = s.waitMs;
        process.stdout.write(
          w.max === undefined
            ? 'wait (submit to start): no job succeeded in the last minute\n'
            : `wait (submit to start): p50 ${w.p50} ms, p90 ${w.p90} ms, p99 ${w.p99} ms, max ${w.max} ms\n`,
        );
      }),
    );
}
