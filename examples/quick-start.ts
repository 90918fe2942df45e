import { once } from 'node:events';
import { PermanentError, Queue, Worker } from 'rota';

const connection = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const queue = new Queue('mail', { connection });

const job = await queue.submit({
  task: 'send',
  group: 'tenant-42', // the tenant; default 'default'
  args: { to: 'ada@example.com' },
  priority: 'high', // 'high' | 'low' (default low)
  maxRetries: 5, // default 3
  id: `welcome-${Date.now()}`, // optional: submitting the same id again returns the same job
});
console.log((await queue.getJob(job.id))?.state); // 'waiting': no executor runs yet

// An executor with 10 slots; run as many as you like, in as many processes.
const worker = new Worker(
  'mail',
  {
    send: async ({ args, log, progress }) => {
      log('sending to', args.to);
      if (!args.to.includes('@')) throw new PermanentError('bad address'); // fail now, no retries
      progress(100);
      return { sent: true }; // stored as the job's result
    },
  },
  { connection, concurrency: 10, retryDelay: 1000 },
);
worker.on('failed', (j, err) => console.error(j.id, err.message));

await once(worker, 'completed');
const done = await queue.getJob(job.id);
console.log(done?.state, done?.result); // 'success' { sent: true }
console.log(await queue.counts()); // jobs per state: { waiting: 0, running: 0, success: 1, ... }

await worker.close({ timeout: 10_000 }); // let running jobs finish, release the rest
await queue.close(); // then the program ends by itself
