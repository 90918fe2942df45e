/**
 * BullMQ, idiomatic: one Queue, Queue.add / addBulk, a Worker with concurrency N.
 * It has no fair groups in its open-source edition, so every tenant shares one queue (what users do today).
 */
import { Queue, Worker } from 'bullmq';
import { type ExecutorOptions, type JobIn, KEEP_COMPLETED, KEEP_FAILED, type Payload, type SystemAdapter } from './types.js';

export function open(url: string, name: string): SystemAdapter {
  const u = new URL(url);
  const connection = { host: u.hostname, port: Number(u.port) };
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
        { connection: { ...connection, maxRetriesPerRequest: null }, concurrency: opts.concurrency },
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
