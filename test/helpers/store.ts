/** Driving the scripts directly in tests, through the stores (src/redis/queue-store.ts). */
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../../src/redis/keys.js';
import { addRun, type Finished, type FinishSettings, QueueStore } from '../../src/redis/queue-store.js';
import type { StringValue } from '../../src/redis/string-array.js';
import { type OutcomeCode, UNSTARTED_PREFIX } from '../../src/redis/wire.js';

/** The store of a queue (by name, or its keys) on client `raw` (events capped at 10,000). */
export function storeOf(raw: Redis, queue: string | QueueKeys): QueueStore {
  const name = typeof queue === 'string' ? queue : /^\{rota:(.*)\}:$/.exec(queue.prefix)![1];
  return new QueueStore(raw, name, { maxEvents: 10_000 });
}

/** Take and finish settings: executor `workerId`, counting scheme (2, 1), 30 s leases, 1 s retry delay. */
export function settings(workerId: string, over: Partial<FinishSettings> = {}): FinishSettings {
  return { workerId, countingScheme: [2, 1], leaseMs: 30_000, retryDelay: 1000, ...over };
}

/** Takes up to `n` jobs: their ids and lease tokens, in take order. */
export async function takeRuns(store: QueueStore, n: number, s: FinishSettings): Promise<Array<[string, string]>> {
  const { jobs } = await store.take(n, s);
  return jobs.map((j) => [j.id, String(j.takeSeq)]);
}

/** Starts runs given as [id, token]. */
export function startRuns(
  store: QueueStore,
  runs: ReadonlyArray<readonly [string, string]>,
  leaseMs = 30_000,
): ReturnType<QueueStore['start']> {
  return store.start(
    leaseMs,
    runs.map(([id, token]) => ({ id, takeSeq: Number(token) })),
  );
}

/**
 * Finishes runs given as [id, token, outcome code ('+' first: its start was not sent), payload],
 * keeping every finished job and taking nothing.
 */
export function finishRuns(
  store: QueueStore,
  runs: ReadonlyArray<readonly [string, string, string, string?]>,
  s: FinishSettings,
): Promise<Finished> {
  const flat: StringValue[] = [];
  for (const [id, token, code, payload] of runs) {
    const unstarted = code.startsWith(UNSTARTED_PREFIX);
    addRun(flat, id, token, (unstarted ? code.slice(UNSTARTED_PREFIX.length) : code) as OutcomeCode, unstarted, payload ?? '');
  }
  return store.finish(s, { succeeded: -1, failed: -1 }, 0, flat);
}
