/**
 * A queue under Sentinel: a manual failover (SENTINEL FAILOVER) in the middle of a drain. With
 * `durability: 'replicated'` every acknowledged submit and finish has reached the replica, so
 * none is lost when it takes over.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, Worker, type WorkerOptions } from '../../src/index.js';
import { type LocalSentinels, MASTER_NAME, startSentinels } from '../helpers/sentinel.js';

let setup: LocalSentinels | undefined;

afterEach(async () => {
  await setup?.destroy();
  setup = undefined;
});

interface Counts {
  /** Acknowledged finishes whose job is not `success` on the new primary. */
  lost: number;
  /** Jobs whose handler ran more than once. */
  duplicates: number;
  /** Acknowledged submits missing on the new primary. */
  missing: number;
}

/** Drains `jobs` jobs through a failover in the middle; counts what the new primary lacks. */
async function drainThroughFailover(durability: WorkerOptions['durability'], jobs: number): Promise<Counts> {
  setup = await startSentinels();
  const connection = { sentinels: setup.sentinels, name: MASTER_NAME };
  const queue = new Queue('sentinel', { connection, durability });
  const runs = new Map<string, number>();
  const acknowledged = new Set<string>();
  let onAck = () => {};
  const worker = new Worker(
    'sentinel',
    {
      work: async ({ job }) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 1));
      },
    },
    { connection, durability, concurrency: 20, leaseMs: 5000 },
  );
  worker.on('error', () => {});
  worker.on('completed', (job) => {
    acknowledged.add(job.id);
    onAck();
  });
  const reach = (n: number) =>
    new Promise<void>((resolve) => {
      onAck = () => acknowledged.size >= n && resolve();
      onAck();
    });
  try {
    const submitted = await queue.submitBulk(Array.from({ length: jobs }, (_, i) => ({ task: 'work', group: `g${i % 10}` })));
    await reach(jobs / 5);
    const port = await setup.failover();
    await reach(jobs);
    const primary = new Redis(port, '127.0.0.1');
    try {
      const states = await Promise.all(submitted.map((j) => primary.hget(`{rota:sentinel}:j:${j.id}`, 'state')));
      const byId = new Map(submitted.map((j, i) => [j.id, states[i]]));
      return {
        lost: [...acknowledged].filter((id) => byId.get(id) !== 'success').length,
        duplicates: [...runs.values()].filter((n) => n > 1).length,
        missing: states.filter((s) => s === null).length,
      };
    } finally {
      primary.disconnect();
    }
  } finally {
    await worker.close({ timeout: 2000 });
    await queue.close();
  }
}

describe('under Sentinel, a manual failover mid-drain', () => {
  it('loses no acknowledged job with durability "replicated"', async () => {
    const counts = await drainThroughFailover('replicated', 5000);
    console.log(`sentinel failover, replicated: ${JSON.stringify(counts)}`);
    expect(counts.lost).toBe(0);
    expect(counts.missing).toBe(0);
  }, 120_000);
});
