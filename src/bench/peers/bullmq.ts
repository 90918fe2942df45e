/**
 * BullMQ, idiomatic: one Queue, Queue.add / addBulk, a Worker with concurrency N.
 * It has no fair groups in its open-source edition, so every tenant shares one queue (what users do today).
 */
import { type ConnectionOptions, Queue, Worker } from 'bullmq';
import type { RedisOptions } from 'ioredis';
import {
  type Endpoint,
  type ExecutorOptions,
  type JobIn,
  KEEP_COMPLETED,
  KEEP_FAILED,
  type Payload,
  type SystemAdapter,
} from './types.js';

export function open(at: Endpoint, name: string): SystemAdapter {
  if (typeof at !== 'string' && at.nodes) throw new Error('bullmq: this comparison runs on a single server, not a Cluster');
  const u = typeof at === 'string' ? new URL(at) : null;
  // (BullMQ's options type is its own copy of ioredis's)
  const connection = (
    u ? { host: u.hostname, port: Number(u.port) } : (at as { options: RedisOptions }).options
  ) as ConnectionOptions;
  const defaultJobOptions = { removeOnComplete: { count: KEEP_COMPLETED }, removeOnFail: { count: KEEP_FAILED } };
  const queue = new Queue(name, { connection, defaultJobOptions });
  return {
    name: 'bullmq',
    async submit(job: JobIn) {
      await queue.add('bench', job.data);
    },
    async submitBulk(jobs: JobIn[]) {
      await queue.addBulk(jobs.map((j) => ({ name: 'bench', data: j.data })));
    },
    async startExecutor(opts: ExecutorOptions) {
      const worker = new Worker(
        name,
        async (job) => {
          const data = job.data as Payload;
          await opts.handler(job.id!, '', data);
        },
        { connection: { ...connection, maxRetriesPerRequest: null } as ConnectionOptions, concurrency: opts.concurrency },
      );
      worker.on('error', (err) => console.error('bullmq worker error:', err.message));
      await worker.waitUntilReady();
      return { close: () => worker.close() };
    },
    async waiting() {
      return queue.getWaitingCount();
    },
    close: () => queue.close(),
  };
}
