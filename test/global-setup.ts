/**
 * Vitest global setup: starts a private Redis on a free port for the whole run (a local
 * redis-server, or a container where there is none and a Docker engine is), unless REDIS_URL names
 * one to use instead. On a machine with neither it stops the run at once with one line saying what
 * to install, before vitest reports anything else. It also bundles the CLI for the tests that run it.
 */
import type { TestProject } from 'vitest/node';
import { bundleCli } from './helpers/cli-bundle.js';
import { findRedisSource, noRedisMessage, type RunningRedis, startRedis } from './helpers/redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** The CLI bundled from source for this run (see test/helpers/cli-bundle.ts). */
    cliBundle: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
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
  };
}
