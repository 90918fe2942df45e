/**
 * Vitest global setup: starts a private Redis on a free port for the whole run (a local
 * redis-server, or a container where there is none and a Docker engine is), unless REDIS_URL names
 * one to use instead. On a machine with neither it stops the run at once with one line saying what
 * to install, before vitest reports anything else. It also bundles the CLI for the tests that run it.
 *
 * Every temporary file of the run lands in one folder of the run's own ($TMPDIR, which the test
 * processes and what they start inherit): at the end, a `rota-*` entry left in it fails the run
 * (a test that does not remove what it made, keys and secrets among them), and the folder is removed.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { bundleCli } from './helpers/cli-bundle.js';
import { findRedisSource, noRedisMessage, type RunningRedis, startRedis } from './helpers/redis-server.js';
import { leftInRunTemp } from './helpers/run-temp.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** The CLI bundled from source for this run (see test/helpers/cli-bundle.ts). */
    cliBundle: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // (vitest runs this once for each project: each makes a folder of its own beside the others, in
  // the system's temporary folder, and checks it; nested, their paths outgrew what a unix socket
  // path may hold, and Chromium could not start)
  process.env.ROTA_SYSTEM_TMPDIR ??= tmpdir();
  const runTemp = mkdtempSync(join(process.env.ROTA_SYSTEM_TMPDIR, 'rota-test-run-'));
  process.env.TMPDIR = runTemp;
  // (removed also when a teardown before this one fails)
  process.once('exit', () => rmSync(runTemp, { recursive: true, force: true }));
  let redis: RunningRedis = { url: process.env.REDIS_URL ?? '', destroy: async () => {} };
  if (!redis.url) {
    const source = await findRedisSource();
    if (source === 'missing') {
      // a thrown error would come after vitest's own "No test files found", which hides the cause
      process.stderr.write(`\n${noRedisMessage('tests')}\n\n`);
      process.exit(1);
    }
    redis = await startRedis({}, source);
  }
  project.provide('redisUrl', redis.url);
  const cli = await bundleCli();
  project.provide('cliBundle', cli.file);
  return async () => {
    await redis.destroy();
    cli.remove();
    if (!existsSync(runTemp)) return;
    const left = leftInRunTemp(readdirSync(runTemp));
    rmSync(runTemp, { recursive: true, force: true });
    if (left.length > 0) {
      throw new Error(`the tests left ${left.length} temporary files behind (removed now): ${left.join(', ')}`);
    }
  };
}
