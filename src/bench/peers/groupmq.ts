/**
 * GroupMQ, idiomatic: Queue.add with a groupId per tenant, a Worker with concurrency N (GroupMQ runs at
 * most one job per group at a time, by design). It has no addBulk: bulk submission is the batch's
 * add() calls issued together (Promise.all), which ioredis writes back to back on one connection.
 * Its autoBatch option is left off, because it acknowledges jobs before they reach Redis.
 */

import { Queue, Worker } from 'groupmq';
import { Redis, type RedisOptions } from 'ioredis';
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
  if (typeof at !== 'string' && at.nodes) throw new Error('groupmq: this comparison runs on a single server, not a Cluster');
  const options = typeof at === 'string' ? {} : at.options;
  const url = typeof at === 'string' ? at : undefined;
  const client = (more: RedisOptions = {}) => (url ? new Redis(url, more) : new Redis({ ...options, ...more }));
  const redis = client();
  const queue = new Queue<Payload>({ redis, namespace: name, keepCompleted: KEEP_COMPLETED, keepFailed: KEEP_FAILED });
  const add = (j: JobIn) => queue.add({ groupId: j.group, data: j.data });
  return {
    name: 'groupmq',
    async submit(job) {
      await add(job);
    },
    async submitBulk(jobs) {
      await Promise.all(jobs.map(add));
    },
    async startExecutor(opts: ExecutorOptions) {
      // Workers get their own connection, as the README's multi-process setups do.
      const wredis = client({ maxRetriesPerRequest: null });
      const wqueue = new Queue<Payload>({
        redis: wredis,
        namespace: name,
        keepCompleted: KEEP_COMPLETED,
        keepFailed: KEEP_FAILED,
      });
      const worker = new Worker<Payload>({
        queue: wqueue,
        concurrency: opts.concurrency,
        handler: async (job) => {
          await opts.handler(job.id, job.groupId, job.data);
        },
        onError: (err) => console.error('groupmq worker error:', (err as Error).message),
      });
      void worker.run();
      return {
        close: async () => {
          await worker.close(5000);
          await wqueue.close().catch(() => {});
          wredis.disconnect();
        },
      };
    },
    async waiting() {
      return queue.getWaitingCount();
    },
    async close() {
      await queue.close().catch(() => {});
      redis.disconnect();
    },
  };
}
