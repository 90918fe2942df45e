/** Per-test helpers: the run's Redis URL (or a file's own server), unique queue names, waiting on events. */

import { Redis } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';
import { type Handlers, Queue, type QueueOptions, Worker, type WorkerOptions } from '../../src/index.js';
import { parseEntry, type QueueEvent } from '../../src/queue/events.js';
import { type RedisServerOptions, type RunningRedis, startRedis } from './redis-server.js';

// (the waits are ./wait.ts's, re-exported for the tests that import them from here)
export { eventually, sleep, until } from './wait.js';

/** URL of the Redis server of this test run. */
export function redisUrl(): string {
  return inject('redisUrl');
}

let n = 0;
/** A queue name no other test uses. */
export function uniqueQueue(label = 'q'): string {
  n += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${n}`;
}

/** A plain client for inspecting Redis in assertions. */
export function rawClient(): Redis {
  return new Redis(redisUrl());
}

/** Every entry of queue `name`'s events stream, parsed as `queue.events()` gives them. */
export async function streamEvents(name: string): Promise<QueueEvent[]> {
  const c = rawClient();
  try {
    const entries = (await c.xrange(`{rota:${name}}:events`, '-', '+')) as Array<[string, string[]]>;
    return entries.flatMap(([sid, fields]) => parseEntry(sid, fields));
  } finally {
    c.disconnect();
  }
}

const opened: Array<{ close(): Promise<unknown> }> = [];

/** Remembers something to close after the test (see {@link closeAll}). */
export function track<T extends { close(): Promise<unknown> }>(thing: T): T {
  opened.push(thing);
  return thing;
}

/** Closes everything tracked, newest first; call it in afterEach. */
export async function closeAll(): Promise<void> {
  for (const c of opened.splice(0).reverse()) await c.close();
}

/** A queue on the test Redis, closed after the test. */
export function openQueue(name: string, opts: Partial<QueueOptions> = {}): Queue {
  return track(new Queue(name, { connection: redisUrl(), ...opts }));
}

/** An executor on the test Redis, closed after the test. */
export function openWorker(name: string, handlers: Handlers, opts: Partial<WorkerOptions> = {}): Worker {
  return track(new Worker(name, handlers, { connection: redisUrl(), ...opts }));
}

/**
 * A Redis of a test file's own, for tests that change its settings or count its commands:
 * started before the file's tests (a local redis-server, or a container where there is none),
 * with a client to inspect and configure it, and destroyed after.
 */
export function privateRedis(opts: RedisServerOptions = {}): { readonly server: RunningRedis; readonly admin: Redis } {
  const own = {} as { server: RunningRedis; admin: Redis };
  beforeAll(async () => {
    own.server = await startRedis(opts);
    own.admin = new Redis(own.server.url);
  });
  afterAll(async () => {
    own.admin?.disconnect();
    await own.server?.destroy();
  });
  return own;
}
