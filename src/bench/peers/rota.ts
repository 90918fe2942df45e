/** Rota, driven through its public API (Queue.submit/submitBulk, Worker), with its defaults: fairness, leases, events on. */
import { Cluster } from 'ioredis';
import { Queue, Worker } from '../../index.js';
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
  const nodes = typeof at === 'string' ? undefined : at.nodes;
  let cluster: Cluster | null = null;
  if (nodes && typeof at !== 'string') {
    const { host: _h, port: _p, db: _db, ...nodeOptions } = at.options;
    cluster = new Cluster(nodes, { redisOptions: nodeOptions });
  }
  const connection = cluster ?? (typeof at === 'string' ? at : at.options);
  const shards = typeof at === 'string' ? 1 : (at.shards ?? 1);
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
