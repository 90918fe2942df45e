/**
 * The migrate command: what a deploy does before Rota's clients start, as a user that may load
 * functions (the deploy user of docs/operations.md#acl): loads this Rota's function library, then
 * migrates the queue's data to the newest schema this Rota knows, every shard, step by step
 * (src/queue/migrate.ts; docs/upgrading.md). Progress goes to stderr, a line a second per step.
 */
import type { Command } from 'commander';
import type { Redis } from 'ioredis';
import { MAX_MIGRATE_BATCH_KEYS, MIGRATE_BATCH_KEYS, migrateQueue, type StepProgress } from '../../queue/migrate.js';
import { loadLibrary, rotaLibrary } from '../../redis/library.js';
import { globals, intOption, openClient, printJson, run } from '../support.js';

/** How often a step's progress is printed (ms), besides its end. */
const PROGRESS_EVERY_MS = 1000;

interface MigrateFlags {
  dryRun?: boolean;
  to?: number;
  batch?: number;
}

/** Registers `rota migrate` on `program`. */
export function register(program: Command): void {
  program
    .command('migrate')
    .description(
      "load this Rota's function library into Redis (as the deploy user; a library of its name holding other code is replaced), then migrate the queue's data to this Rota's schema, online and resumable",
    )
    .option('--dry-run', 'say which steps would run on each shard and how many keys they would read; write nothing')
    .option(
      '--to <schema>',
      'the schema version to migrate to (default: the newest this Rota knows)',
      intOption('--to', 1, 1_000_000),
    )
    .option(
      '--batch <keys>',
      `keys one batch reads (default ${MIGRATE_BATCH_KEYS})`,
      intOption('--batch', 1, MAX_MIGRATE_BATCH_KEYS),
    )
    .option('--json', 'print what it did as JSON (progress lines on stderr as JSON too)')
    .action(async (o: MigrateFlags, cmd: Command) =>
      run(async () => {
        const g = globals(cmd);
        const client = await openClient(g);
        try {
          const library = rotaLibrary().name;
          const changed = o.dryRun ? null : await loadLibrary(client as Redis, { replace: true });
          let printed = 0;
          const onProgress = (p: StepProgress) => {
            if (!p.complete && Date.now() - printed < PROGRESS_EVERY_MS) return;
            printed = Date.now();
            process.stderr.write(g.json ? `${JSON.stringify(p)}\n` : `${progressLine(g.queue, p)}\n`);
          };
          const shards = await migrateQueue(client, g.queue, { to: o.to, batch: o.batch, dryRun: o.dryRun, onProgress });
          if (g.json) {
            printJson({ library, changed, queue: g.queue, dryRun: o.dryRun === true, shards });
            return;
          }
          const out: string[] = [];
          if (o.dryRun) out.push(`would load function library ${library} (unless loaded)`);
          else out.push(`function library ${library} ${changed ? 'loaded' : 'was loaded already'}`);
          const ran = shards.filter((s) => s.steps.length > 0);
          // (a queue at this schema: one line; one never used: the library's line alone)
          const recorded = shards.find((s) => s.schema !== null);
          if (!ran.length && recorded) out.push(`queue ${g.queue}: schema ${recorded.after}, nothing to migrate`);
          for (const s of ran) {
            for (const st of s.steps) {
              const head = `queue ${g.queue} shard ${s.shard}: step ${st.from} -> ${st.to} (${st.description})`;
              out.push(o.dryRun ? `${head}: would read ${st.keys} job keys` : `${head}: ${st.rewritten} records rewritten`);
            }
          }
          process.stdout.write(`${out.join('\n')}\n`);
        } finally {
          client.disconnect();
        }
      }),
    );
}

/** A step's progress in a line. */
function progressLine(queue: string, p: StepProgress): string {
  return `rota migrate: queue ${queue} shard ${p.shard} step ${p.from} -> ${p.to}: ${p.scanned} keys read in ${p.batches} batches, ${p.rewritten} records rewritten${p.complete ? ', done' : ''}`;
}
