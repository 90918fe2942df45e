/**
 * Vitest global setup: starts a private redis-server on a free port for the whole run,
 * unless REDIS_URL names one to use instead.
 */
import type { TestProject } from 'vitest/node';
import { RedisServer } from './helpers/redis-server.js';

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
  const server = await RedisServer.start();
  project.provide('redisUrl', server.url);
  return async () => {
    await server.destroy();
  };
}
