/**
 * Why a group's jobs wait: its state as the take sees it. A group with jobs waiting is runnable,
 * or held by one or more of: paused, at its concurrency limit (n running of m), parked by its
 * rate until a time, or no live executor registered in its shard to take from it.
 */
import type { GroupState } from '../redis/group-state.js';
import { shardOfGroup } from '../redis/shards.js';
import { waitingOf } from './group-index.js';
import { ago, count, type Html, html } from './html.js';
import type { QueueLive } from './reader.js';

/** Live executors registered in the shard of group `group` (the queue's, unsharded), as of the last tick. */
export function liveExecutorsOf(live: QueueLive, group: string): number {
  const t = live.shards > 1 ? live.shardTicks[shardOfGroup(group, live.shards)] : live.tick;
  return t?.liveExecutors ?? 0;
}

/** What a group's state is read from. */
export interface GroupFacts {
  /** Its record (undefined: the groups hash holds none: nothing waiting, default settings). */
  state?: GroupState;
  /** Runs in progress (from the leases). */
  running: number;
  /** When its rate parks it until (ms). */
  parkedUntil?: number;
  /** Live executors registered in its shard. */
  liveExecutors: number;
  /** Redis server time (ms). */
  now: number;
}

/** One thing that holds a group's waiting jobs. */
export type Hold =
  | { kind: 'paused' }
  | { kind: 'no-executor' }
  | { kind: 'at-limit'; running: number; limit: number }
  | { kind: 'rate-parked'; until: number };

/** A group's state: jobs waiting, and what holds them (none: runnable). */
export interface GroupStatus {
  waiting: number;
  holds: Hold[];
}

/** The state of a group from its facts. */
export function groupStatus(f: GroupFacts): GroupStatus {
  const g = f.state;
  const waiting = g ? waitingOf(g) : 0;
  const holds: Hold[] = [];
  if (g?.paused) holds.push({ kind: 'paused' });
  if (g && g.limit > 0 && f.running >= g.limit) holds.push({ kind: 'at-limit', running: f.running, limit: g.limit });
  if (f.parkedUntil !== undefined && f.parkedUntil > f.now) holds.push({ kind: 'rate-parked', until: f.parkedUntil });
  if (f.liveExecutors === 0) holds.push({ kind: 'no-executor' });
  return { waiting, holds };
}

/** What each state means, for its title (a tooltip). */
const HELP: Record<Hold['kind'] | 'runnable' | 'idle', string> = {
  runnable: 'runnable: jobs wait for their turn in the round-robin of groups',
  idle: 'nothing waiting: no job of this group waits to run (it may hold delayed, stuck or finished jobs)',
  paused: 'paused: no job of this group is taken until it is resumed',
  'at-limit': 'at its concurrency limit: a job starts when one of its runs ends',
  'rate-parked': 'parked by its rate limit: it is left out of the rotation until its window frees',
  'no-executor': 'no live executor is registered for this queue (or this group’s shard): nothing takes its jobs',
};

/** A time of day, `HH:MM:SS UTC`. */
function clock(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

function holdHtml(h: Hold, now: number): Html {
  switch (h.kind) {
    case 'paused':
      return html`<span class="gstate gstate-paused" title="${HELP.paused}">paused</span>`;
    case 'no-executor':
      return html`<span class="gstate gstate-no-executor" title="${HELP['no-executor']}">no live executor</span>`;
    case 'at-limit':
      return html`<span class="gstate gstate-at-limit" title="${HELP['at-limit']}">at limit (${count(h.running)} running of ${count(h.limit)})</span>`;
    case 'rate-parked':
      return html`<span class="gstate gstate-rate-parked" title="${HELP['rate-parked']}">rate-parked until ${clock(h.until)} (${ago(h.until, now)})</span>`;
  }
}

/** A group's state as markup: runnable, nothing waiting, or what holds it (each with its explanation as a title). */
export function groupStatusHtml(s: GroupStatus, now: number): Html {
  if (s.waiting === 0) {
    const paused = s.holds.find((h) => h.kind === 'paused');
    return html`<span class="gstate gstate-idle" title="${HELP.idle}">nothing waiting</span>${paused ? html` ${holdHtml(paused, now)}` : ''}`;
  }
  if (s.holds.length === 0) return html`<span class="gstate gstate-runnable" title="${HELP.runnable}">runnable</span>`;
  return html`${s.holds.map((h, i) => html`${i ? ' · ' : ''}${holdHtml(h, now)}`)}`;
}
