#!/usr/bin/env node
/**
 * The `rota` command line. Each command lives in `src/cli/commands/<name>.ts`
 * and exports `register(program)`; add one import and one line to
 * {@link COMMANDS} to plug in a new command.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import { MAX_SHARDS } from '../redis/shards.js';
import { rotaVersion } from '../version.js';
import { register as registerBench } from './commands/bench.js';
import { register as registerCalendar } from './commands/calendar.js';
import { register as registerDashboard } from './commands/dashboard.js';
import { register as registerDemo } from './commands/demo.js';
import { register as registerGroups } from './commands/groups.js';
import { register as registerJobAdmin } from './commands/job-admin.js';
import { register as registerJobs } from './commands/jobs.js';
import { register as registerMigrate } from './commands/migrate.js';
import { register as registerPeriodic } from './commands/periodic.js';
import { register as registerReshard } from './commands/reshard.js';
import { register as registerWorker } from './commands/worker.js';
import { EXIT_CODES_HELP, EXIT_INVALID, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { keepUrlSecrets, maskSecrets, printMessage } from './secrets.js';
import { CliError, type GlobalOptions, intOption, readSecretFile } from './support.js';

/** Signature every command module exports. */
export type RegisterCommand = (program: Command) => void;

/** The commands of the CLI, in help order. */
const COMMANDS: RegisterCommand[] = [
  registerDemo,
  registerWorker,
  registerJobs,
  registerJobAdmin,
  registerGroups,
  registerPeriodic,
  registerCalendar,
  registerDashboard,
  registerReshard,
  registerMigrate,
  registerBench,
];

/**
 * Every command answers a command-line error with one line and a pointer to its help (not the
 * whole help text), on stderr, prefixed `rota:` as the commands' own errors are.
 */
function shortErrors(cmd: Command, path: string): void {
  cmd
    .showHelpAfterError(`(see: ${path} --help)`)
    .configureOutput({ outputError: (message, write) => write(maskSecrets(message.replace(/^error: /, 'rota: '))) });
  for (const sub of cmd.commands) shortErrors(sub, `${path} ${sub.name()}`);
}

/** Builds the `rota` program with its global options and all commands. */
export function buildProgram(): Command {
  const program = new Command('rota')
    .description('Rota: a fair distributed job queue and periodic-task scheduler for Redis')
    .version(rotaVersion(), '-V, --version', 'print the version of rota')
    // (the URL may hold a password: $REDIS_URL's value is not shown as the default in --help)
    .addOption(
      new Option(
        '--redis <url>',
        'Redis URL (a password in it is visible in the process list: prefer $REDIS_URL or --redis-file)',
      )
        .env('REDIS_URL')
        .default('redis://127.0.0.1:6379'),
    )
    .option('--redis-file <file>', 'read the Redis URL from this file (keeps its password out of the process list)')
    .option('--queue <name>', 'queue name', 'default')
    .addOption(
      new Option('--shards <n>', "the queue's shard count (default: the count the queue records, else 1)")
        .env('ROTA_SHARDS')
        .argParser(intOption('--shards', 1, MAX_SHARDS)),
    )
    .option('--tls-ca <file>', "CA certificate (PEM) to trust the server's TLS certificate with")
    .option('--tls-cert <file>', 'client TLS certificate (PEM)')
    .option('--tls-key <file>', "client TLS certificate's private key (PEM)")
    .option('--utc', "print times in UTC (default: periodic tasks' times in their time zone)")
    .addHelpText('after', `\n${EXIT_CODES_HELP}`)
    .exitOverride();
  for (const register of COMMANDS) register(program);
  program.hook('preAction', () => {
    readRedisFile(program);
    keepUrlSecrets((program.opts() as GlobalOptions).redis);
  });
  shortErrors(program, 'rota');
  return program;
}

/**
 * Reads `--redis-file` into `--redis`, which it replaces (but not a `--redis` given on the
 * command line: both at once are a usage error).
 * @throws {CliError} when both are given, or the file cannot be read or is empty.
 */
function readRedisFile(program: Command): void {
  const file = (program.opts() as GlobalOptions).redisFile;
  if (file === undefined) return;
  if (program.getOptionValueSource('redis') === 'cli') {
    throw new CliError('give --redis or --redis-file, not both', EXIT_USAGE);
  }
  program.setOptionValueWithSource('redis', readSecretFile('--redis-file', file), 'config');
}

/**
 * Runs the CLI and resolves to its exit status (see ./exit-codes.ts): 0 ok, 1 invalid value,
 * 2 usage error, 3 Redis unreachable, 4 not found. Commands report failures by setting `process.exitCode`.
 */
export async function main(argv: string[] = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CliError) {
      printMessage(err.message);
      return err.exitCode;
    }
    if (err instanceof CommanderError) {
      // Help and version exit 0; a value an option or argument refused is an invalid value;
      // every other commander error (unknown option or command, missing argument) is a usage error.
      if (err.exitCode === 0) return EXIT_OK;
      return err.code === 'commander.invalidArgument' ? EXIT_INVALID : EXIT_USAGE;
    }
    throw err;
  }
  return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
}

/**
 * Exits with `code` once stdout and stderr have handed on all they were given: a pipe takes 64 KiB
 * at a time, and `process.exit` before its reader has taken the rest would cut the output.
 */
function exitWhenWritten(code: number): void {
  process.exitCode = code;
  let open = 2;
  const done = () => {
    open -= 1;
    if (open === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
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
  // A command is done when main resolves (long-running ones resolve once they have stopped): exit
  // then, rather than wait for timers that libraries leave behind (ioredis's parser shrinks its
  // buffer for a second or two after a large reply, such as the library check's).
  main().then(exitWhenWritten, (err: unknown) => {
    printMessage(err instanceof Error ? err.message : String(err));
    exitWhenWritten(1);
  });
}
