/** Runs the `rota` CLI from source (bundled for the run) as a user would, and collects what it printed. */
import { execFile } from 'node:child_process';
import { inject } from 'vitest';
import { TS_EXEC_ARGV } from './processes.js';
import { eventually } from './setup.js';

/** The CLI's entry point. */
export const BIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

/** What one run of the CLI gave. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Node's arguments that start the CLI: the run's bundle (test/helpers/cli-bundle.ts), or the source through tsx. */
export function cliEntry(): string[] {
  const bundle = inject('cliBundle');
  return bundle ? [bundle] : [...TS_EXEC_ARGV, BIN];
}

/** Runs `rota ...args` (with `env` added to the environment) and resolves when it exits. */
export function rota(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...cliEntry(), ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as NodeJS.ErrnoException).code === 'number'
            ? Number((err as NodeJS.ErrnoException).code)
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The page a dashboard process serves at `http://127.0.0.1:<port>/`, once it serves (within `timeoutMs`). */
export function servedPage(port: number, timeoutMs = 20_000): Promise<string> {
  return eventually(async () => {
    try {
      return await (await fetch(`http://127.0.0.1:${port}/`)).text();
    } catch {
      return undefined;
    }
  }, timeoutMs);
}
