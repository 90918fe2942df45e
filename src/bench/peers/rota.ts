/** Rota, driven through its public API (Queue.submit/submitBulk, Worker), with its defaults: fairness, leases, events on. */
import { Cluster } from 'ioredis';
import { isolated } from '../../executor/isolated.js';
import { Worker } from '../../executor/worker.js';
import { Queue } from '../../queue/queue.js';
import type { ConnectionOption } from '../../redis/connection.js';
import {
  type Endpoint,
  type ExecutorOptions,
  type JobIn,
  KEEP_COMPLETED,
  KEEP_FAILED,
  type Payload,
  type SystemAdapter,
} from './types.js';

/**
 * The `connection` and shard count Rota's classes take for `at`; `close` ends a Cluster client
 * made for it (a client passed in is left open by Rota's classes).
 */
export function rotaConnection(at: Endpoint): { connection: ConnectionOption; shards: number; close(): Promise<void> } {
  let cluster: Cluster | null = null;
  if (typeof at !== 'string' && at.nodes) {
    const { host: _h, port: _p, db: _db, ...nodeOptions } = at.options;
    cluster = new Cluster(at.nodes, { redisOptions: nodeOptions });
  }
  return {
    connection: cluster ?? (typeof at === 'string' ? at : at.options),
    shards: typeof at === 'string' ? 1 : (at.shards ?? 1),
    close: async () => {
      await cluster?.quit();
    },
  };
}

export function open(at: Endpoint, name: string): SystemAdapter {
  const { connection, shards, close } = rotaConnection(at);
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
      const where = opts.isolate;
      const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
      const worker = new Worker(
        name,
        {
          bench: where
            ? isolated(new URL(`../isolated-noop.${ext}`, import.meta.url), { in: where, min: opts.concurrency })
            : ({ job, args }) => opts.handler(job.id, job.group, args as Payload),
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
      if (where) worker.on('completed', (job) => void opts.handler(job.id, job.group, job.args as Payload));
      // (an isolated pool's threads or processes are all started here, before the measured drain)
      await worker.run();
      return {
        close: () => worker.close({ timeout: 5000 }),
        childCpuUs: () => worker.poolStats().reduce((s, p) => s + p.cpuUs, 0),
      };
    },
    async waiting() {
      return (await queue.counts()).waiting;
    },
    async close() {
      await queue.close();
      await close();
    },
  };
}
