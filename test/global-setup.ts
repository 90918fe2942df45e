/**
 * Vitest global setup: starts a private Redis on a free port for the whole run (a local
 * redis-server, or a container where there is none and a Docker engine is), unless REDIS_URL names
 * one to use instead. On a machine with neither it stops the run at once with one line saying what
 * to install, before vitest reports anything else.
 */
import type { TestProject } from 'vitest/node';
import { findRedisSource, noRedisMessage, startRedis } from './helpers/redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.REDIS_URL) {
    project.provide('redisUrl', process.env.REDIS_URL);
    return async () => {};
  }
  const source = await findRedisSource();
  if (source === 'missing') {
    // a thrown error would come after vitest's own "No test files found", which hides the cause
    process.stderr.write(`\n${noRedisMessage('tests')}\n\n`);
    process.exit(1);
  }
  const server = await startRedis({}, source);
  project.provide('redisUrl', server.url);
  return async () => {
    await server.destroy();
  };
}
