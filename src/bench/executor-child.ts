/**
 * A forked executor process (for the multi-process drain): opens the system, starts a worker on
 * 'go', reports progress, and on 'stop' closes it and reports the ids it ran, its CPU and peak RSS.
 * Started by benchmarks/executor.ts, or by the hidden `rota bench-executor` command.
 */
import { cpuSince, RssPeak } from './measure.js';
import { openSystem } from './peers/open.js';
import type { Endpoint, SystemName } from './peers/types.js';
import { handlerWork } from './workloads/common.js';

interface Init {
  system: SystemName;
  at: Endpoint;
  queue: string;
  concurrency: number;
  handlerMs: number;
}

const send = (m: unknown, sent: () => void = () => {}) => process.send!(m, sent);

/**
 * Serves the parent over IPC until it says 'stop', then exits; the returned promise never
 * resolves (the process ends with its report). The process also ends when the parent goes.
 */
export function runExecutorChild(): Promise<never> {
  if (!process.send) throw new Error('an executor process is started by rota bench (it needs an IPC channel)');
  process.once('disconnect', () => process.exit(1));
  process.once('message', (init: Init) => void serve(init));
  return new Promise<never>(() => {});
}

async function serve(init: Init): Promise<void> {
  const adapter = await openSystem(init.system, init.at, init.queue);
  const ids: string[] = [];
  let reported = 0;
  let cpu = process.cpuUsage();
  let rss: RssPeak | null = null;
  let exec: { close(): Promise<void> } | null = null;
  const progress = setInterval(() => {
    if (ids.length === reported) return;
    reported = ids.length;
    send({ type: 'progress', n: reported });
  }, 5);
  process.on('message', async (m: { type: string }) => {
    if (m.type === 'go') {
      cpu = process.cpuUsage();
      rss = new RssPeak();
      exec = await adapter.startExecutor({
        concurrency: init.concurrency,
        handler: (id) => {
          ids.push(id);
          return handlerWork(init.handlerMs);
        },
      });
    } else if (m.type === 'stop') {
      await exec?.close();
      clearInterval(progress);
      const cpuUs = cpuSince(cpu);
      await adapter.close();
      // Exit once the report is written to the channel: a report of tens of thousands of ids
      // takes a while to go, and one cut off by an early exit never arrives (the run then
      // counts only the other processes' jobs).
      send({ type: 'done', ids, cpuUs, peakRssBytes: rss?.stop() ?? process.memoryUsage.rss() }, () => process.exit(0));
    }
  });
  send({ type: 'ready' });
}
