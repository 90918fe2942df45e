/**
 * The dashboard's live updates and their cost: with many pages open on two queues while jobs
 * keep changing, the pages get their updates through server-sent events, and the commands the
 * dashboard sends Redis (counted with MONITOR on a server of this file's own, the commands run
 * inside scripts left out) stay within two a second per queue.
 */
import { get, type IncomingMessage } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Queue } from '../../src/queue/queue.js';
import { eventually, privateRedis, uniqueQueue } from '../helpers/setup.js';

/** An open event stream, with the events it got by name. */
interface Stream {
  res: IncomingMessage;
  events: Map<string, number>;
}

function openStream(url: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      const s: Stream = { res, events: new Map() };
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let at = buf.indexOf('\n\n');
        while (at >= 0) {
          const name = /^event: (.*)$/m.exec(buf.slice(0, at))?.[1];
          if (name) s.events.set(name, (s.events.get(name) ?? 0) + 1);
          buf = buf.slice(at + 2);
          at = buf.indexOf('\n\n');
        }
      });
      resolve(s);
    }).on('error', reject);
  });
}

describe('live updates', () => {
  const own = privateRedis();
  const names = [uniqueQueue('live-a'), uniqueQueue('live-b')];
  let served: DashboardServer;
  let producer: Redis;
  let queues: Queue[];
  const streams: Stream[] = [];
  let producing: NodeJS.Timeout;

  beforeAll(async () => {
    producer = new Redis(own.server.url, { connectionName: 'producer' });
    queues = names.map((n) => new Queue(n, { connection: producer }));
    for (const q of queues) await q.submitBulk(Array.from({ length: 50 }, (_, i) => ({ task: 't', group: `g${i % 5}` })));
    served = await serveDashboard({ connection: own.server.url, queues: names, port: 0 });
    // Jobs keep changing: every view is out of date at every tick.
    producing = setInterval(() => {
      for (const q of queues) void q.submit({ task: 't', group: `g${Math.floor(Math.random() * 5)}` });
    }, 100);
  });

  afterAll(async () => {
    clearInterval(producing);
    for (const s of streams) s.res.destroy();
    await served?.close();
    producer?.disconnect();
  });

  it('sends Redis at most 2 commands a second per queue with many pages open', async () => {
    const views = [
      '/',
      '/groups',
      '/groups?sort=group',
      '/jobs',
      '/jobs?state=waiting&group=g1',
      '/executors',
      '/periodic',
      '/jobs/none',
    ];
    for (const n of names) {
      for (const v of views) {
        for (let copy = 0; copy < 2; copy++)
          streams.push(await openStream(`${served.url}q/${n}/live?view=${encodeURIComponent(v)}`));
      }
    }
    // Every page gets ticks, and the pages that read Redis get their views re-rendered.
    await eventually(async () => streams.every((s) => (s.events.get('tick') ?? 0) >= 2), 30_000);
    await eventually(async () => streams.filter((s) => (s.events.get('view') ?? 0) > 0).length >= names.length * 4, 60_000);

    const list = await own.admin.client('LIST');
    const excluded = new Set(
      String(list)
        .split('\n')
        .filter((l) => / name=producer /.test(l) || / cmd=client/.test(l))
        .map((l) => /addr=(\S+)/.exec(l)?.[1]),
    );
    const monitor = await new Redis(own.server.url).monitor();
    let commands = 0;
    const byCommand = new Map<string, number>();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua' || excluded.has(source)) return;
      commands++;
      byCommand.set(args[0], (byCommand.get(args[0]) ?? 0) + 1);
    });
    const viewsBefore = streams.reduce((n, s) => n + (s.events.get('view') ?? 0), 0);
    const started = Date.now();
    // (a window of ten ticks on every page, about ten seconds, and at least one view refreshed)
    const ticksBefore = streams.map((s) => s.events.get('tick') ?? 0);
    await eventually(
      'ten more ticks on every page, and a view refreshed',
      async () =>
        streams.every((s, i) => (s.events.get('tick') ?? 0) >= ticksBefore[i] + 10) &&
        streams.reduce((n, s) => n + (s.events.get('view') ?? 0), 0) > viewsBefore,
      40_000,
    );
    const seconds = (Date.now() - started) / 1000;
    monitor.disconnect();
    const viewsAfter = streams.reduce((n, s) => n + (s.events.get('view') ?? 0), 0);

    const perQueueSecond = commands / names.length / seconds;
    expect(viewsAfter).toBeGreaterThan(viewsBefore);
    expect(commands, JSON.stringify([...byCommand])).toBeGreaterThan(0);
    // One tick a second and a queue, and one command of view refreshes: 2, and one of slack for
    // a tick that began before the window; and per queue, a render begun before the window's end
    // on a budget of one command may send one more (an executors page reads its runs, a history
    // refresh a day), paid back in the next ticks.
    expect(commands, JSON.stringify([...byCommand])).toBeLessThanOrEqual(
      Math.ceil(2 * names.length * seconds) + 1 + names.length,
    );
    expect(perQueueSecond).toBeLessThanOrEqual(2.2);
  });
});
