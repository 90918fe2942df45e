/**
 * A forked executor process (for the multi-process drain): opens the system, starts a worker on
 * 'go', reports progress, and on 'stop' closes it and reports the ids it ran, its CPU and peak RSS.
 */
import { cpuSince, RssPeak } from './measure.js';
import { openSystem } from './systems/open.js';
import type { SystemName } from './systems/types.js';

interface Init {
  system: SystemName;
  url: string;
  queue: string;
  concurrency: number;
}

const send = (m: unknown, sent: () => void = () => {}) => process.send!(m, sent);

process.once('message', async (init: Init) => {
  const adapter = await openSystem(init.system, init.url, init.queue);
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
      exec = await adapter.startExecutor({ concurrency: init.concurrency, handler: (id) => void ids.push(id) });
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
});
