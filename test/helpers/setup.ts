/** Per-test helpers: the run's Redis URL, unique queue names, waiting on events. */
import { inject } from 'vitest';
import { Redis } from 'ioredis';

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

/** Resolves when `pred` holds, checking after each event of `emitter` named `event`. */
export function until<T>(emitter: NodeJS.EventEmitter, event: string, pred: () => T | undefined | false, timeoutMs = 20_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const v = pred();
      if (v) {
        cleanup();
        resolve(v);
      }
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`timed out after ${timeoutMs} ms waiting on "${event}"`));
    }, timeoutMs);
    const cleanup = () => {
      clearTimeout(timer);
      emitter.off(event, check);
    };
    emitter.on(event, check);
    check();
  });
}
