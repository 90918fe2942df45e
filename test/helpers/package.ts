/**
 * The package as it ships, for the packaging tests: its sources compiled into a temporary folder
 * (`npm run build` into another outDir, so that the checkout's dist is left alone), and a folder
 * laid out as package.json's `files` lists.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep } from './wait.js';

export const run = promisify(execFile);

/** The checkout's root. */
export const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');

/** package.json of the checkout. */
export const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  main: string;
  types: string;
  exports: Record<string, Record<string, Record<string, string>>>;
  files: string[];
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};

/** A new temporary folder named after `label`. */
export function tempDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `rota-${label}-`));
}

/**
 * The sources compiled as `npm run build` does (tsconfig.build.json), into a folder that stands for
 * `dist`: the compiled sources are at `<folder>/src`. One build serves the whole run: the first
 * caller compiles it into the run's temporary folder (removed with the run's folder), the others,
 * in any test process, wait for it. Read it only: it is shared.
 */
export async function build(): Promise<string> {
  const out = join(tmpdir(), 'shared-dist');
  const done = join(out, '.built');
  const failed = join(out, '.failed');
  try {
    mkdirSync(out);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // another process builds it: wait for its marker (a build takes tens of seconds)
    for (;;) {
      if (existsSync(done)) return out;
      if (existsSync(failed)) throw new Error(`the shared build failed: ${readFileSync(failed, 'utf8')}`);
      await sleep(200);
    }
  }
  try {
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', out], {
      cwd: ROOT,
    });
  } catch (err) {
    writeFileSync(failed, String((err as Error).message));
    throw err;
  }
  writeFileSync(done, '');
  return out;
}

/**
 * A folder holding package.json, README and LICENSE (which npm packs whatever `files` says) and
 * what its `files` lists, the compiled sources from `dist`.
 */
export function stage(dist: string): string {
  const dir = tempDir('package');
  for (const file of ['package.json', 'README.md', 'LICENSE']) cpSync(join(ROOT, file), join(dir, file));
  for (const entry of PACKAGE.files) {
    const from = entry === 'dist' || entry.startsWith('dist/') ? join(dist, entry.slice(5)) : join(ROOT, entry);
    cpSync(from, join(dir, entry), { recursive: true });
  }
  return dir;
}

/** `npm <args>` in `cwd`, from the local cache where it can (no audit, no funding notes). */
export function npm(args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund'], { cwd, maxBuffer: 16 * 1024 * 1024 });
}
