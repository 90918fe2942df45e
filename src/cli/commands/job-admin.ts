/** Job commands acting on many jobs: delete, and promote (run delayed or stuck jobs now). */
import { type Command, InvalidArgumentError } from 'commander';
import { JOB_STATES, type JobState } from '../../queue/job.js';
import { summarize } from '../../queue/job-action-summary.js';
import { ACTION_STATES, type JobAction, type JobTarget } from '../../queue/job-actions.js';
import { EXIT_INVALID, EXIT_NOT_FOUND, EXIT_USAGE } from '../exit-codes.js';
import { CliError, intOption, withQueue } from '../support.js';

interface TargetOptions {
  all?: boolean;
  state?: JobState;
  group?: string;
  task?: string;
  limit?: number;
}

function stateOf(action: JobAction) {
  return (value: string): JobState => {
    if (!(JOB_STATES as readonly string[]).includes(value) || !ACTION_STATES[action].includes(value as JobState))
      throw new InvalidArgumentError(`expected one of ${ACTION_STATES[action].join(', ')}`);
    return value as JobState;
  };
}

/** The jobs a command acts on: the ids given, or with --all every job of --state (and --group, --task). */
function targetOf(ids: string[], o: TargetOptions): JobTarget {
  if (o.all) {
    if (ids.length > 0) throw new CliError('give job ids or --all, not both', EXIT_USAGE);
    if (o.state === undefined) throw new CliError('--all needs --state', EXIT_USAGE);
    return { state: o.state, group: o.group, task: o.task, limit: o.limit };
  }
  if (ids.length === 0) throw new CliError('give job ids, or --all with --state', EXIT_USAGE);
  if (o.group !== undefined || o.task !== undefined || o.limit !== undefined)
    throw new CliError('--group, --task and --limit go with --all', EXIT_USAGE);
  return { ids, state: o.state };
}

function command(program: Command, action: 'delete' | 'promote', description: string): void {
  program
    .command(action)
    .description(description)
    .argument('[ids...]', 'job ids')
    .option('--all', 'every job of --state (of --group and --task, when given)')
    .option('--state <state>', `one of ${ACTION_STATES[action].join(', ')}: only jobs in it`, stateOf(action))
    .option('--group <group>', 'with --all: only this group')
    .option('--task <task>', 'with --all: only this task')
    .option('--limit <n>', 'with --all: at most this many', intOption('--limit', 1, Number.MAX_SAFE_INTEGER))
    .option('--json', 'print what was done as JSON')
    .action(async (ids: string[], o: TargetOptions, cmd: Command) =>
      withQueue(cmd, async (queue, g) => {
        const target = targetOf(ids, o);
        const r = action === 'delete' ? await queue.deleteJobs(target) : await queue.promoteJobs(target);
        if (g.json) process.stdout.write(`${JSON.stringify(r)}\n`);
        else process.stdout.write(`${summarize(action, r)}\n`);
        // One id given: its failure is the command's.
        if ('ids' in target && target.ids.length === 1 && r.done === 0) {
          if (r.missing === 1) throw new CliError(`no job "${target.ids[0]}" in queue "${queue.name}"`, EXIT_NOT_FOUND);
          throw new CliError(`job ${target.ids[0]} was left as it was`, EXIT_INVALID);
        }
      }),
    );
}

/** Registers `rota delete` and `rota promote` on `program`. */
export function register(program: Command): void {
  command(program, 'delete', 'delete jobs (every key of each); scheduled and running jobs are left (cancel them first)');
  command(program, 'promote', 'run delayed or stuck jobs now: each goes to the front of its priority in its group');
}
