/**
 * The dashboard's shared reader: one per dashboard process, shared by every open page. Once a
 * second, while pages are open, it reads each queue shard in one script call (dashboard-tick.lua):
 * counts, executors, finished jobs since the last tick, a step of the sweep of the groups hash,
 * and (for one shard of one queue) the server's memory and ops/s; a sharded queue's tick adds up
 * its shards' (./shards.ts). It refreshes each queue's history from Redis (./history.ts), and re-renders
 * the open pages' views for their live updates within a budget of one more command a second per
 * shard, so that the dashboard sends Redis at most two commands a second per queue shard however
 * many pages are open.
 */
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import type { RotaError } from '../errors.js';
import type { DashboardStore, Tick } from '../redis/dashboard-store.js';
import { checkLayout } from '../redis/schema.js';
import { shardOfGroup } from '../redis/shards.js';
import { Fairness } from './fairness.js';
import { GroupIndex } from './group-index.js';
import { QueueHistory } from './history.js';
import { mergeTicks, type ShardStores } from './shards.js';

/** The reader ticks while a page is open, or for this long after the last request (ms). */
const IDLE_AFTER_MS = 60_000;
/** A view that did not change is still re-rendered this often (relative times, next runs), ms. */
const VIEW_MAX_AGE_MS = 15_000;
/** Fields of the groups hash the sweep reads a tick. */
const SWEEP_COUNT = 2000;
/**
 * Groups whose oldest waiting job the oldest-wait sweep reads a tick (up to six keys each: at
 * 2,000 a tick the call took 30 to 75 ms at 100,000 groups; at 200, a round takes 500 s there).
 */
const OLDEST_SWEEP_COUNT = 200;
/**
 * Members of the sets of delayed and finished jobs the held sweep reads a tick (a job hash read
 * each): at a million finished jobs a round takes some 17 minutes; the first load reads them all.
 */
const HELD_SWEEP_COUNT = 1000;
/** A tick older than this many intervals is read again before a request uses it. */
const STALE_TICKS = 3;
/** Executors listed at most. */
export const MAX_EXECUTORS = 500;
/** States a job never leaves: their counts do not hold submitted work. */
const FINAL = new Set(['success', 'failed', 'cancelled']);

/** The throughput between two ticks: time (s), submitted/s, finished/s. */
export type RatePoint = [number, number, number];

/** A page open in a browser, kept up to date by the reader. */
interface LiveView {
  key: string;
  queue: string;
  /** The view as a path and query below the queue's base, e.g. `/groups?sort=waiting`. */
  view: string;
  subs: Set<ServerResponse>;
  /** The queue's newest event when the view was last rendered. */
  seen: string;
  renderedAt: number;
}

/** What the reader knows of one queue. */
export class QueueLive implements ShardStores {
  /** The queue's tick (over its shards). */
  tick?: Tick;
  /** Each shard's last tick, by shard number (the next counts the jobs finished since its time). */
  shardTicks: Tick[] = [];
  /** When the last tick was read (this process's clock, ms). */
  tickedAt = 0;
  /** The tick a request asked for, while it is read. */
  refreshing?: Promise<void>;
  /** The throughput between the last two ticks. */
  point?: RatePoint;
  /** The queue's history (processed, failed, run times), read from Redis. */
  readonly history: QueueHistory;
  /** The groups page's fairness view, read from the per-group history. */
  readonly fairness: Fairness;
  readonly groups: GroupIndex;
  /** Commands the view refreshes may still spend (one more a tick per shard, at most one a shard ahead). */
  tokens = 1;
  /** The tick being read (ticks of a queue are read one after the other). */
  ticking: Promise<void> = Promise.resolve();
  /**
   * Why the queue cannot be read whole, as the last tick found its layout (a reshard under way or
   * killed, another shard count): its ticks are not used then, and its open views show this.
   */
  refusal?: RotaError;
  /**
   * @param stores the queue's shard stores, by shard number (the home shard last when there are several)
   * @param shards the queue's shard count
   */
  constructor(
    readonly name: string,
    readonly stores: readonly DashboardStore[],
    client: Redis,
    readonly shards = 1,
  ) {
    this.groups = new GroupIndex(
      client,
      stores.map((s) => s.keys.groups),
      (group) => shardOfGroup(group, shards),
      (shard, cursor) => stores[shard].detail.held(cursor, HELD_SWEEP_COUNT),
    );
    this.history = new QueueHistory(stores.map((s) => s.history));
    this.fairness = new Fairness(stores.map((s) => s.history));
  }
}

/** Renders a view's main content (the same markup as the page's), for a live update. */
export type ViewRenderer = (queue: string, view: string) => Promise<string>;

/** Counts in `counter` the commands a client sends (every command, those of pipelines included). */
export function countCommands(client: Redis, counter: { sent: number }): void {
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    counter.sent++;
    return send(...args);
  }) as Redis['sendCommand'];
}

/**
 * The shared reader.
 * Emits `tick` (queue name) after each queue's tick.
 */
export class LiveReader extends EventEmitter {
  readonly queues = new Map<string, QueueLive>();
  private readonly views = new Map<string, LiveView>();
  private timer?: NodeJS.Timeout;
  private running = false;
  private lastUse = Date.now();
  private closed = false;

  constructor(
    queues: QueueLive[],
    private readonly counter: { readonly sent: number },
    private readonly render: ViewRenderer,
    private readonly intervalMs = 1000,
  ) {
    super();
    for (const q of queues) this.queues.set(q.name, q);
  }

  /** Starts ticking (idle while no page is open and no request came for a minute). */
  start(): void {
    this.timer ??= setInterval(() => void this.step(), this.intervalMs);
    this.timer.unref();
  }

  /**
   * Notes a request: the reader stays awake for a minute after it. Ticks now when it had no tick
   * yet, or only an old one (it slept: no page was open), so that a page never shows stale counts
   * and times.
   */
  async touch(queue?: string): Promise<void> {
    this.lastUse = Date.now();
    const q = queue ? this.queues.get(queue) : undefined;
    if (q && (!q.tick || Date.now() - q.tickedAt > STALE_TICKS * this.intervalMs)) {
      // (requests that come together share one read)
      q.refreshing ??= this.tickQueue(q, true).finally(() => {
        q.refreshing = undefined;
      });
      await q.refreshing;
    }
  }

  /** Subscribes an event stream to a queue's ticks and to the updates of its view. */
  subscribe(queue: string, view: string, res: ServerResponse): () => void {
    const key = `${queue}\n${view}`;
    let v = this.views.get(key);
    if (!v) {
      v = { key, queue, view, subs: new Set(), seen: this.queues.get(queue)?.tick?.lastEvent ?? '', renderedAt: Date.now() };
      this.views.set(key, v);
    }
    v.subs.add(res);
    const live = v;
    return () => {
      live.subs.delete(res);
      if (live.subs.size === 0) this.views.delete(key);
    };
  }

  /** Open event streams. */
  get subscribers(): number {
    let n = 0;
    for (const v of this.views.values()) n += v.subs.size;
    return n;
  }

  private async step(): Promise<void> {
    if (this.running || this.closed) return;
    if (this.subscribers === 0 && Date.now() - this.lastUse > IDLE_AFTER_MS) return;
    this.running = true;
    try {
      let first = true;
      for (const q of this.queues.values()) {
        await this.tickQueue(q, first);
        first = false;
        await this.refreshViews(q);
      }
    } catch (err) {
      this.emit('error', err);
    } finally {
      this.running = false;
    }
  }

  /** Reads a queue's tick and refreshes its history; one at a time per queue (a request may ask for the first). */
  private tickQueue(q: QueueLive, server: boolean): Promise<void> {
    const run = q.ticking.then(() => this.readTick(q, server));
    q.ticking = run.catch(() => {});
    return run;
  }

  private async readTick(q: QueueLive, server: boolean): Promise<void> {
    const prev = q.tick;
    // (each shard counts the jobs finished since its own last tick, by its own server's clock)
    const ticks = await Promise.all(
      q.stores.map((store, i) =>
        store.tick({
          since: q.shardTicks[i]?.now,
          cursor: q.groups.cursor(i),
          sweepCount: SWEEP_COUNT,
          oldestCursor: q.groups.oldestCursor(i),
          oldestCount: OLDEST_SWEEP_COUNT,
          heldCursor: q.groups.heldCursor(i),
          heldCount: HELD_SWEEP_COUNT,
          maxExecutors: MAX_EXECUTORS,
          // (the server figures of one shard: the home shard's, last)
          server: server && i === q.stores.length - 1,
          history: true,
        }),
      ),
    );
    // (a tick of part of the queue's jobs is not shown: the last whole one stays)
    const { layout } = ticks[ticks.length - 1];
    try {
      checkLayout(q.name, q.shards, layout);
      q.refusal = undefined;
    } catch (err) {
      q.refusal = err as RotaError;
      return;
    }
    ticks.forEach((t, i) => {
      q.groups.swept(i, t.swept, t.cursor);
      q.groups.sweptOldest(i, t.oldest, t.oldestCursor);
      q.groups.sweptHeld(i, t.held, t.heldCursor);
    });
    q.shardTicks = ticks;
    const t = mergeTicks(ticks);
    if (!t.server && prev?.server) t.server = prev.server;
    if (prev && t.now > prev.now) {
      const dt = (t.now - prev.now) / 1000;
      const finished = t.finished.success + t.finished.failed + t.finished.cancelled;
      // What entered the queue: the change of the jobs not finished, plus those that finished.
      const submitted = Math.max(0, active(t.counts) - active(prev.counts) + finished);
      q.point = [Math.round(t.now / 1000), submitted / dt, finished / dt];
    }
    // The history's small refreshes spend the views' budget (its first, whole read does not);
    // a read that fails leaves the last one shown, and the next tick tries again.
    const before = this.counter.sent;
    const small = await q.history
      .refresh(
        t.now,
        ticks.map((s) => s.history),
      )
      .catch((err: unknown) => {
        this.emit('error', err);
        return true;
      });
    if (small) q.tokens -= this.counter.sent - before;
    q.tick = t;
    q.tickedAt = Date.now();
    this.emit('tick', q.name);
  }

  /**
   * Re-renders the queue's open views that changed (or aged), oldest first, while the budget
   * allows: a refresh costs the commands it sent; the budget grows by one a tick per shard.
   */
  private async refreshViews(q: QueueLive): Promise<void> {
    const n = q.stores.length;
    q.tokens = Math.min(n, q.tokens + n);
    const now = Date.now();
    // (what a view was rendered at: the queue's newest event, or the refusal it showed)
    const mark = q.refusal ? `refused: ${q.refusal.message}` : (q.tick?.lastEvent ?? '');
    const stale = [...this.views.values()]
      .filter((v) => v.queue === q.name && (v.seen !== mark || (!q.refusal && now - v.renderedAt > VIEW_MAX_AGE_MS)))
      .sort((a, b) => a.renderedAt - b.renderedAt);
    for (const v of stale) {
      if (q.tokens <= 0) break;
      const before = this.counter.sent;
      let body: string;
      try {
        body = await this.render(q.name, v.view);
      } catch (err) {
        this.emit('error', err);
        continue;
      } finally {
        q.tokens -= this.counter.sent - before;
      }
      v.seen = mark;
      v.renderedAt = Date.now();
      const data = `event: view\ndata: ${JSON.stringify(body)}\n\n`;
      for (const res of v.subs) res.write(data);
    }
  }

  /** Stops ticking and ends the open event streams. */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const v of this.views.values()) for (const res of v.subs) res.end();
    this.views.clear();
  }
}

/** Jobs not finished, from a queue's counts (every state the counts hold but the final ones). */
function active(counts: Record<string, number>): number {
  let n = 0;
  for (const [state, c] of Object.entries(counts)) if (!FINAL.has(state)) n += c;
  return n;
}
