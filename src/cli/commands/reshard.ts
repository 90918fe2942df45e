/** The reshard command: changes a queue's shard count (procedure: docs/operations.md). */
import type { Command } from 'commander';
import { type ReshardReport, reshard } from '../../queue/reshard.js';
import { printMessage } from '../secrets.js';
import { globals, intOption, openClient, printJson, run } from '../support.js';

/** What a reshard did, in one line. */
function describe(r: ReshardReport): string {
  if (r.from === r.to && !r.resumed) return `queue ${r.queue} has ${r.to} shard${r.to === 1 ? '' : 's'} already; nothing to do\n`;
  const did = [
    `${r.moved} job${r.moved === 1 ? '' : 's'} moved`,
    `settings of ${r.groups} group${r.groups === 1 ? '' : 's'} copied`,
    r.recovered > 0 ? `${r.recovered} expired run${r.recovered === 1 ? '' : 's'} recovered first` : '',
    r.dropped > 0 ? `${r.dropped} shard${r.dropped === 1 ? '' : 's'} deleted` : '',
  ].filter(Boolean);
  return `queue ${r.queue}: ${r.from} -> ${r.to} shards${r.resumed ? ' (an earlier run finished)' : ''}; ${did.join(', ')}. Start its executors, producers and schedulers with shards: ${r.to}\n`;
}

/** Registers `rota reshard` on `program`. */
export function register(program: Command): void {
  program
    .command('reshard')
    .description(
      "change a queue's shard count: move its jobs to their shards in the new count (stop its executors and producers first; see docs/operations.md)",
    )
    .argument('<queue>', 'the queue to reshard')
    .requiredOption('--to <n>', 'the shard count to go to', intOption('--to', 1, 1024))
    .option('--batch <n>', 'most jobs one step moves out of a shard (default 500)', intOption('--batch', 1, 10_000))
    .option('--json', 'print what it did as JSON')
    .action(async (queue: string, o: { to: number; batch?: number }, cmd: Command) =>
      run(async () => {
        const g = globals(cmd);
        const client = await openClient(g);
        let said = Date.now();
        try {
          const report = await reshard(client, queue, {
            to: o.to,
            batch: o.batch,
            // (a large queue takes a while: a line a few seconds on stderr)
            onProgress: (moved) => {
              if (Date.now() - said < 5000) return;
              said = Date.now();
              printMessage(`${moved} jobs moved so far`);
            },
          });
          if (g.json) printJson(report);
          else process.stdout.write(describe(report));
        } finally {
          client.disconnect();
        }
      }),
    );
}
