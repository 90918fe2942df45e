/**
 * The live stream of a page (`/live?view=<path>`, server-sent events): the queue's tick message
 * (counts, throughput, memory) after each tick of the shared reader, built once per tick for every
 * open page, and the updates of the page's view that the reader renders. Also the tick as JSON
 * (`/api/tick`), without the reader's cursors.
 */
import type { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Tick } from '../redis/dashboard-store.js';
import { bytes, count } from './html.js';
import type { QueueLive } from './reader.js';
import type { Reply } from './respond.js';
import { SECURITY_HEADERS } from './security.js';
import { slotsBusy } from './views/overview.js';

/** What the stream needs of the shared reader (a LiveReader): its `tick` events (a queue name) and view subscriptions. */
export interface TickFeed extends EventEmitter {
  subscribe(queue: string, view: string, res: ServerResponse): () => void;
}

/** The live streams of a dashboard. */
export class LiveStream {
  /** Each queue's last tick message. */
  private readonly messages = new Map<string, string>();

  /** @param message the tick message of a queue, built after each of its ticks */
  constructor(
    private readonly feed: TickFeed,
    message: (queue: string) => string,
    private readonly reply: Reply,
  ) {
    feed.on('tick', (name: string) => this.messages.set(name, message(name)));
  }

  /** Opens the stream of `queue` for the view that `url` names (a path of the queue's pages), until the client goes. */
  open(queue: string, url: URL, req: IncomingMessage, res: ServerResponse): void {
    const view = url.searchParams.get('view') ?? '/';
    if (!view.startsWith('/') || view.startsWith('//')) {
      this.reply.page(res, 400, 'Refused', 'view must be a path.');
      return;
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 3000\n\n');
    const first = this.messages.get(queue);
    if (first) res.write(first);
    const onTick = (name: string) => {
      if (name === queue) res.write(this.messages.get(name)!);
    };
    this.feed.on('tick', onTick);
    const unsubscribe = this.feed.subscribe(queue, view, res);
    req.on('close', () => {
      this.feed.off('tick', onTick);
      unsubscribe();
    });
  }
}

/** The tick message of a queue's last tick. */
export function tickMessage(live: QueueLive): string {
  const t = live.tick!;
  return `event: tick\ndata: ${JSON.stringify({
    now: t.now,
    counts: t.counts,
    point: live.point ?? null,
    minute: live.history.hourSeries().at(-1) ?? null,
    executors: count(t.liveExecutors),
    slots: slotsBusy(t),
    memory: t.server ? bytes(t.server.usedMemory) : null,
    ops: t.server ? count(t.server.opsPerSec) : null,
  })}\n\n`;
}

/** The body of `/api/tick`: the queue's last tick, without the reader's cursors, and its hour of history. */
export function tickJson(live: QueueLive): string {
  const {
    swept: _swept,
    cursor: _cursor,
    oldest: _oldest,
    oldestCursor: _oldestCursor,
    heldCursor: _heldCursor,
    held: _held,
    ...tick
  } = live.tick ?? ({} as Partial<Tick>);
  return JSON.stringify({ tick, history: live.history.hourSeries() });
}
