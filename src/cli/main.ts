#!/usr/bin/env node
/**
 * The `rota` command line. Each command lives in `src/cli/commands/<name>.ts`
 * and exports `register(program)`; add one import and one line to
 * {@link COMMANDS} to plug in a new command.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { register as registerCalendar } from './commands/calendar.js';
import { register as registerDashboard } from './commands/dashboard.js';
import { register as registerDemo } from './commands/demo.js';
import { register as registerGroups } from './commands/groups.js';
import { register as registerJobs } from './commands/jobs.js';
import { register as registerPeriodic } from './commands/periodic.js';
import { register as registerWorker } from './commands/worker.js';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/** Signature every command module exports. */
export type RegisterCommand = (program: Command) => void;

/** The commands of the CLI, in help order. */
const COMMANDS: RegisterCommand[] = [
  registerDemo,
  registerWorker,
  registerJobs,
  registerGroups,
  registerPeriodic,
  registerCalendar,
  registerDashboard,
];

/** Options every command can read with `command.optsWithGlobals()`. */
export interface GlobalOptions {
  /** Redis URL (default: $REDIS_URL or redis://127.0.0.1:6379). */
  redis: string;
  /** Queue name (default: "default"). */
  queue: string;
  /** PEM file of the CA that signed the server's TLS certificate. */
  tlsCa?: string;
  /** PEM file of the client's TLS certificate (for servers that ask for one). */
  tlsCert?: string;
  /** PEM file of the client certificate's private key. */
  tlsKey?: string;
}

/** Builds the `rota` program with its global options and all commands. */
export function buildProgram(): Command {
  const program = new Command('rota')
    .description('Rota: a fair distributed job queue and periodic-task scheduler for Redis')
    .option('--redis <url>', 'Redis URL', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
    .option('--queue <name>', 'queue name', 'default')
    .option('--tls-ca <file>', "CA certificate (PEM) to trust the server's TLS certificate with")
    .option('--tls-cert <file>', 'client TLS certificate (PEM)')
    .option('--tls-key <file>', "client TLS certificate's private key (PEM)")
    .showHelpAfterError()
    .exitOverride();
  for (const register of COMMANDS) register(program);
  return program;
}

/**
 * Runs the CLI and resolves to its exit status: 0 ok, 1 invalid input,
 * 2 usage error. Commands report invalid input by setting `process.exitCode`.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; every other commander error is a usage error.
      return err.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    throw err;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
}

function invokedDirectly(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  // A reader that stops early (`rota jobs | head`) closes the pipe: that ends the output, not in an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
  });
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`rota: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
