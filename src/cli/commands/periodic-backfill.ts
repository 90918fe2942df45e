/** `rota periodic backfill ID --from ISO --to ISO`: run now what a task would have run over a past range. */
import { type Command, InvalidArgumentError } from 'commander';
import type { PeriodicTasks } from '../../periodic/tasks.js';
import { printMessage } from '../secrets.js';
import { type CliError, printJson } from '../support.js';

/** An ISO-8601 time (or ms since the epoch) read into ms. */
function isoTime(flag: string) {
  return (value: string): number => {
    const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    if (Number.isNaN(ms)) throw new InvalidArgumentError(`${flag} must be an ISO-8601 time such as 2026-01-01T00:00:00Z`);
    return ms;
  };
}

/** What the command needs of `rota periodic`'s own helpers. */
type WithTasks = (
  cmd: Command,
  fn: (tasks: PeriodicTasks, ctx: { json: boolean; queue: string }) => Promise<void>,
) => Promise<void>;

/** Registers `backfill` on the `periodic` command. */
export function registerBackfill(periodic: Command, withTasks: WithTasks, notFound: (id: string) => CliError): void {
  periodic
    .command('backfill')
    .description('submit now every occurrence of a task in [--from, --to), each once (not those that ran already)')
    .argument('<id>')
    .requiredOption('--from <time>', 'start of the range (ISO-8601, included)', isoTime('--from'))
    .requiredOption('--to <time>', 'end of the range (ISO-8601, excluded; not after now)', isoTime('--to'))
    .option('--overlap <policy>', 'buffer-all (default: one after another, in order) | allow (all at once)')
    .option('--force', 'submit occurrences that already ran too')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o: { from: number; to: number; overlap?: string; force?: boolean }, cmd: Command) =>
      withTasks(cmd, async (tasks, { json, queue }) => {
        const overlap = (o.overlap ?? 'buffer-all') as 'buffer-all' | 'allow';
        const r = await tasks.backfill(id, { from: o.from, to: o.to, overlap, force: o.force === true });
        if (!r) throw notFound(id);
        if (json) return printJson(r);
        process.stdout.write(`${id}: ${r.occurrences} occurrences, ${r.submitted} submitted, ${r.alreadyRan} had run already\n`);
        if (overlap === 'buffer-all' && r.submitted > 0 && (await tasks.schedulers()).length === 0) {
          printMessage(
            `warning: no scheduler replica is running for queue "${queue}"; buffer-all runs start only once one runs (rota scheduler --queue ${queue})`,
          );
        }
      }),
    );
}
