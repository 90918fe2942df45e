/**
 * The migrate command: what a deploy does before Rota's clients start, as a user that may load
 * functions (the deploy user of docs/operations.md#acl): loads this Rota's function library.
 */
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { loadLibrary, rotaLibrary } from '../../redis/library.js';
import { globals, openClient, printJson, run } from '../support.js';

/** Registers `rota migrate` on `program`. */
export function register(program: Command): void {
  program
    .command('migrate')
    .description(
      "load this Rota's function library into Redis (as the deploy user; a library of its name holding other code is replaced)",
    )
    .option('--json', 'print what it did as JSON')
    .action(async (_o: unknown, cmd: Command) =>
      run(async () => {
        const g = globals(cmd);
        const client = await openClient(g);
        try {
          const library = rotaLibrary().name;
          const changed = await loadLibrary(client as Redis, { replace: true });
          if (g.json) printJson({ library, changed });
          else process.stdout.write(`function library ${library} ${changed ? 'loaded' : 'was loaded already'}\n`);
        } finally {
          client.disconnect();
        }
      }),
    );
}
