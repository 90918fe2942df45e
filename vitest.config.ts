import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * What keeps a test file out of the quick set (`npm run test:quick`) and in the full suite only:
 * found in the file's text, so a new file lands in one set or the other by what it does, with no
 * list to keep. The quick set is the unit tests and the tests on one Redis server.
 */
const FULL_ONLY: ReadonlyArray<readonly [RegExp, string]> = [
  [/helpers\/(cluster|file-cluster|reshard|sentinel)\.js|cluster: true/, 'Redis Cluster, resharding or Sentinel'],
  [/replicaof|fixtures\/failover\.js/, 'replication, or a failover'],
  [/playwright-core|helpers\/browser\.js/, 'a browser'],
  [/helpers\/faketime\.js/, 'a faked clock'],
  [/\bNodeProcess\b|\.kill\(\)/, 'processes a test starts and kills'],
  [/helpers\/cli\.js/, 'the CLI run as a process (each start costs a second or two of CPU)'],
  [/helpers\/package\.js/, 'the package built, packed and installed (a TypeScript build and npm)'],
  [/@full-suite/, 'a scale or soak test, marked so in a comment'],
];

const root = fileURLToPath(new URL('.', import.meta.url));
const files = (readdirSync(join(root, 'test'), { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `test/${f}`)
  .sort();
const fullOnly = files.filter((f) => {
  const text = readFileSync(join(root, f), 'utf8');
  return FULL_ONLY.some(([re]) => re.test(text));
});
const quick = files.filter((f) => !fullOnly.includes(f));

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one fork fewer than the cores: on two cores, one file at a time. Most test
    // files wait on Redis and timers, not on the CPU, so one more than the cores keeps them busy.
    maxWorkers: availableParallelism() + 1,
    projects: [
      { extends: true, test: { name: 'quick', include: quick } },
      { extends: true, test: { name: 'full-only', include: fullOnly } },
    ],
  },
});
