/** `rota demo [--duration S]`: the one-command demo (see src/demo/demo.ts). */
import type { Command } from 'commander';
import { type DemoSummary, describeSummary, runDemo } from '../../demo/demo.js';
import { ValidationError } from '../../errors.js';
import { EXIT_INVALID, EXIT_UNREACHABLE } from '../exit-codes.js';
import { CliError, intOption, printJson, run } from '../support.js';

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
        const g = cmd.optsWithGlobals() as { redis: string; shards?: number };
        let summary: DemoSummary;
        try {
          summary = await runDemo({
            redis: redisGiven ? g.redis : undefined,
            durationS: o.duration,
            flood: o.flood,
            shards: g.shards,
          });
        } catch (err) {
          if (err instanceof ValidationError) throw new CliError(err.message.replace(/^connection:/, '--redis:'), EXIT_INVALID);
          throw new CliError((err as Error).message, EXIT_UNREACHABLE);
        }
        if (o.json) printJson(summary);
        else process.stdout.write(describeSummary(summary));
      }),
    );
}
