/** `rota demo [--duration S]`: the one-command demo (see src/demo/demo.ts). */
import type { Command } from 'commander';
import { type DemoSummary, describeSummary, runDemo } from '../../demo/demo.js';
import { ValidationError } from '../../errors.js';
import { EXIT_INVALID, EXIT_UNREACHABLE } from '../exit-codes.js';
import { CliError, globals, intOption, openTarget, printJson, run, type Target } from '../support.js';

/** Registers the `demo` command on `program`. */
export function register(program: Command): void {
  program
    .command('demo')
    .description('run executors, a scheduler and a flooding tenant on a local Redis, with a live view')
    .option('--duration <s>', 'stop after this many seconds (non-interactive)', intOption('--duration', 1, 86_400))
    .option('--flood <n>', 'jobs the flooding tenant submits', intOption('--flood', 1, 1_000_000), 4000)
    .option('--json', 'print the summary as JSON')
    .action(async (o: { duration?: number; flood: number; json?: boolean }, cmd: Command) =>
      run(async () => {
        const redisGiven = cmd.parent?.getOptionValueSource('redis') === 'cli' || Boolean(process.env.REDIS_URL);
        const g = globals(cmd);
        // (a Redis given is checked first, and a Cluster node is taken for its cluster; no queue is read)
        const target: Target | undefined = redisGiven ? await openTarget(g, []) : undefined;
        let summary: DemoSummary;
        try {
          summary = await runDemo({
            redis: target?.connection,
            durationS: o.duration,
            flood: o.flood,
            shards: g.shards,
          });
        } catch (err) {
          if (err instanceof ValidationError) throw new CliError(err.message.replace(/^connection:/, '--redis:'), EXIT_INVALID);
          throw new CliError((err as Error).message, EXIT_UNREACHABLE);
        } finally {
          target?.close();
        }
        if (o.json) printJson(summary);
        else process.stdout.write(describeSummary(summary));
      }),
    );
}
