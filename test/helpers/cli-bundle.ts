/**
 * The CLI bundled from source once per test run, for the tests that run `rota` as a process: Node
 * starts the bundle in a third of the CPU time that loading each source file through tsx takes,
 * and the CLI tests start it some two hundred times. Built at the start of each run, so it is never
 * stale; the dependencies stay outside it, in node_modules, as in an installed package.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Bundles src/cli/main.ts; the file sits three folders below the package root, where the CLI finds lua/ and package.json. */
export async function bundleCli(): Promise<{ file: string; remove(): void }> {
  mkdirSync(`${ROOT}node_modules/.cache`, { recursive: true });
  const dir = mkdtempSync(`${ROOT}node_modules/.cache/rota-cli-`);
  const file = `${dir}/main.mjs`;
  const bundle = (entry: string, outfile: string) =>
    build({
      entryPoints: [`${ROOT}${entry}`],
      outfile,
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'warning',
    });
  await bundle('src/cli/main.ts', file);
  // (beside it, as in the package: what the threads and processes of isolated tasks run)
  await bundle('src/executor/isolate-entry.ts', `${dir}/isolate-entry.js`);
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
