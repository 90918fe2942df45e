/** Rota, driven through its public API (Queue.submit/submitBulk, Worker), with its defaults: fairness, leases, events on. */
import { Cluster } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { type ExecutorOptions, type JobIn, KEEP_COMPLETED, KEEP_FAILED, type Payload, type SystemAdapter } from './types.js';

/** Where the queue lives: a Redis URL, or a Redis Cluster (its startup nodes) with the queue's shard count. */
export type RotaTarget = string | { nodes: Array<{ host: string; port: number }>; shards: number };

export function open(target: RotaTarget, name: string): SystemAdapter {
  const cluster = typeof target === 'string' ? null : new Cluster(target.nodes);
  const connection = cluster ?? (target as string);
  const shards = typeof target === 'string' ? 1 : target.shards;
  const queue = new Queue(name, { connection, shards });
  const spec = (j: JobIn) => ({ task: 'bench', group: j.group, args: j.data });
  return {
    name: 'rota',
    async submit(job) {
      await queue.submit(spec(job));
    },
    async submitBulk(jobs) {
      await queue.submitBulk(jobs.map(spec));
    },
    async startExecutor(opts: ExecutorOptions) {
      const worker = new Worker(
        name,
        {
          bench: ({ job, args }) => opts.handler(job.id, job.group, args as Payload),
        },
        {
          connection,
          concurrency: opts.concurrency,
          keepSucceeded: { count: KEEP_COMPLETED },
          keepFailed: { count: KEEP_FAILED },
          shards,
        },
      );
      worker.on('error', (err) => console.error('rota worker error:', err.message));
      await worker.run();
      return { close: () => worker.close({ timeout: 5000 }) };
    },
    async waiting() {
      return (await queue.counts()).waiting;
    },
    async close() {
      await queue.close();
      // a client passed in is left open by the queue
      await cluster?.quit();
    },
  };
}
