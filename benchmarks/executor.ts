/**
 * A forked executor process (for the multi-process drain): opens the system, starts a worker on
 * 'go', reports progress, and on 'stop' closes it and reports the ids it ran, its CPU and peak RSS.
 */
import { cpuSince, RssPeak } from './measure.js';
import { openSystem, type SystemName } from './systems/types.js';

interface Init {
  system: SystemName;
  url: string;
  queue: string;
  concurrency: number;
}

const send = (m: unknown) => process.send!(m);

process.once('message', async (init: Init) => {
  const adapter = await openSystem(init.system, init.url, init.queue);
  const ids: string[] = [];
  let reported = 0;
  let cpu = process.cpuUsage();
  let rss: RssPeak | null = null;
  let exec: { close(): Promise<void> } | null = null;
  const progress = setInterval(() => {
    if (ids.length !== reported) send({ type: 'progress', n: (reported = ids.length) });
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
      send({ type: 'done', ids, cpuUs, peakRssBytes: rss?.stop() ?? process.memoryUsage.rss() });
      setTimeout(() => process.exit(0), 50);
    }
  });
  send({ type: 'ready' });
});
