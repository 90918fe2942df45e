/** Group commands: groups, pause-group, resume-group, group-limit; and workers, stats. */
import type { Command } from 'commander';
import { formatDuration } from '../../timers/duration.js';
import { intOption, printJson, printTable, withQueue } from '../support.js';
import { rateOption } from './durations.js';

/** Registers the group, executor and stats commands on `program`. */
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
            x.rate ? `${x.rate.max}/${formatDuration(x.rate.perMs)}` : 'none',
          ]),
        );
      }),
    );

  const pausing = [
    { name: 'pause-group', description: "stop handing out a group's jobs (running ones go on)", paused: true },
    { name: 'resume-group', description: "hand out a paused group's jobs again", paused: false },
  ];
  for (const p of pausing) {
    program
      .command(p.name)
      .description(p.description)
      .argument('<group>')
      .action(async (group: string, _o: unknown, cmd: Command) =>
        withQueue(cmd, async (queue) => {
          await (p.paused ? queue.pauseGroup(group) : queue.resumeGroup(group));
          process.stdout.write(`group ${group} ${p.paused ? 'paused' : 'resumed'}\n`);
        }),
      );
  }

  program
    .command('group-limit')
    .description("set a group's concurrency limit (0: none), round-robin weight and rate limit")
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
    .action(
      async (
        group: string,
        o: { concurrency?: number; weight?: number; rate?: { max: number; perMs: number } | 'none' },
        cmd: Command,
      ) =>
        withQueue(cmd, async (queue) => {
          await queue.setGroupLimit(group, { ...o, rate: o.rate === 'none' ? null : o.rate });
          process.stdout.write(`group ${group}: ${JSON.stringify(o)}\n`);
        }),
    );

  program
    .command('workers')
    .description('live executors')
    .option('--json', 'print one JSON object per line')
    .action(async (_o: unknown, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const workers = await queue.workers();
        if (g.json) return workers.forEach(printJson);
        printTable(
          ['ID', 'HOST', 'PID', 'STARTED', 'CONCURRENCY', 'RUNNING'],
          workers.map((w) => [w.id, w.host, w.pid, new Date(w.started).toISOString(), w.concurrency, w.running]),
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
          `wait (submit to start): p50 ${w.p50 ?? '-'} ms, p90 ${w.p90 ?? '-'} ms, p99 ${w.p99 ?? '-'} ms, max ${w.max ?? '-'} ms\n`,
        );
      }),
    );
}
