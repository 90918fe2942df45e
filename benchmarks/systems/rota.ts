/** Rota, driven through its public API (Queue.submit/submitBulk, Worker), with its defaults: fairness, leases, events on. */
import { Queue, Worker } from '../../src/index.js';
import { type ExecutorOptions, type JobIn, KEEP_COMPLETED, KEEP_FAILED, type Payload, type SystemAdapter } from './types.js';

export function open(url: string, name: string): SystemAdapter {
  const queue = new Queue(name, { connection: url });
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
          connection: url,
          concurrency: opts.concurrency,
          keepSucceeded: { count: KEEP_COMPLETED },
          keepFailed: { count: KEEP_FAILED },
        },
      );
      worker.on('error', (err) => console.error('rota worker error:', err.message));
      await worker.run();
      return { close: () => worker.close({ timeout: 5000 }) };
    },
    async waiting() {
      return (await queue.counts()).waiting;
    },
    close: () => queue.close(),
  };
}
