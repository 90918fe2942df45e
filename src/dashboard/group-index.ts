/**
 * The dashboard's index of a queue's groups, for the groups page's paging and sorting at any
 * number of groups without a request reading the whole `groups` hash: the index is loaded once
 * in the background (HSCAN, a thousand at a time) and then kept by the shared reader's sweep,
 * a step of it each tick (see reader.ts). It also holds the runs in progress per group, as the
 * last groups page read them (they are as many as the executors' slots): a group with runs and
 * nothing waiting has no record in the hash, and is listed from them. The order of a page comes
 * from the index (as of the last sweep); the values shown are read fresh for the page's groups.
 * A sharded queue has a `groups` hash per shard, each swept on its own: a group's record in the
 * index adds up its counts over the shards that hold it, its settings are its own shard's.
 * A group whose jobs are all delayed or finished has no record either: the index lists it from a
 * third sweep, of the sets that hold such jobs (lua/includes/heldScan.lua), done whole in the
 * first load (in bounded steps) and then a step each tick.
 */
import type { Redis } from 'ioredis';
import { EMPTY_GROUP, type GroupState, readGroupStates } from '../redis/group-state.js';

/** A column the groups page sorts on: a field of the record, the runs in progress, or the name. */
export type GroupSort = 'group' | 'waiting' | 'running' | 'oldest' | 'stuck' | 'limit' | 'weight' | 'paused' | string;

/** Runnable waiting jobs of a record: its high, low and preferred lists (less the stuck ones). */
export function waitingOf(g: GroupState): number {
  return g.nh + g.nl + Math.max(0, g.nr - g.stuck);
}

/** Fields of a group record that count jobs or runs: a group's records in several shards add them up. */
const COUNTED = ['running', 'stuck', 'nr', 'nh', 'nl', 'logged'] as const;

/**
 * One group's record over the shards: `records` by shard (undefined where a shard has none), its
 * counts added up, its settings those of shard `own` (of another that has one when `own` has none).
 */
export function mergeGroupStates(records: ReadonlyArray<GroupState | undefined>, own: number): GroupState | undefined {
  const held = records.filter((r) => r !== undefined);
  if (held.length <= 1) return held[0];
  const out = { ...(records[own] ?? held[0]) };
  for (const f of COUNTED) out[f] = held.reduce((n, r) => n + (r[f] ?? 0), 0);
  return out;
}

/** Sorted orders of a large index are recomputed at most this often while it changes (ms). */
const SORT_MAX_AGE_MS = 5000;
/** An index this small is sorted again whenever it changed. */
const SMALL_INDEX = 10_000;

/** What the index holds of one shard's `groups` hash, and where its sweeps are. */
class ShardPart {
  readonly states = new Map<string, GroupState>();
  /**
   * Submitted time of each group's oldest waiting job (ms), as the oldest-wait sweep (a slower
   * round of its own: it reads up to six keys a group) or a page last read it.
   */
  readonly oldest = new Map<string, number>();
  /** Names seen in the current round of the sweep. */
  round = new Set<string>();
  next = '0';
  oldestNext = '0';
  /** Groups holding delayed or finished jobs, as the last round of the held sweep and the current one met them. */
  held = new Set<string>();
  /** Groups the current round of the held sweep met. */
  heldRound = new Set<string>();
  heldNext = '0';
  constructor(readonly key: string) {}
}

/** A step of the held sweep of a shard: from a cursor, the next one ('0': round over) and the groups met. */
export type HeldStep = (shard: number, cursor: string) => Promise<{ cursor: string; groups: string[] }>;

/** Steps of the held sweep the first load takes at most per shard (past them, the ticks' steps go on). */
const MAX_LOAD_STEPS = 2000;

export class GroupIndex {
  private readonly parts: ShardPart[];
  /** Runs in progress per group (those with some, over every shard), as the last groups page read them. */
  private running = new Map<string, number>();
  private loading?: Promise<void>;
  private loaded = false;
  private version = 0;
  private readonly sorted = new Map<string, { version: number; at: number; names: string[] }>();
  private sized = { version: -1, n: 0 };

  /**
   * @param keys each shard's `groups` hash, by shard number
   * @param ownShard the shard number of a group (whose record holds its settings)
   */
  constructor(
    private readonly client: Redis,
    keys: readonly string[],
    private readonly ownShard: (group: string) => number = () => 0,
    private readonly heldStep?: HeldStep,
  ) {
    this.parts = keys.map((k) => new ShardPart(k));
  }

  /** The cursor shard `shard`'s next sweep starts from (undefined until the first load is done). */
  cursor(shard: number): string | undefined {
    return this.loaded ? this.parts[shard].next : undefined;
  }

  /** The names of every group the index holds. */
  private names(): string[] {
    if (this.parts.length === 1) {
      const { states, held } = this.parts[0];
      const names = [...states.keys()];
      for (const name of this.running.keys()) if (!states.has(name)) names.push(name);
      for (const name of held) if (!states.has(name) && !this.running.has(name)) names.push(name);
      return names;
    }
    const all = new Set<string>();
    for (const part of this.parts) {
      for (const name of part.states.keys()) all.add(name);
      for (const name of part.held) all.add(name);
    }
    for (const name of this.running.keys()) all.add(name);
    return [...all];
  }

  /** Groups in the index: those with a record, with runs in progress, or holding delayed or finished jobs. */
  get size(): number {
    if (this.sized.version === this.version) return this.sized.n;
    let n: number;
    if (this.parts.length > 1) n = this.names().length;
    else {
      // (counted without listing the names: a page asks for it on every request)
      const { states, held } = this.parts[0];
      n = states.size;
      for (const name of this.running.keys()) if (!states.has(name)) n++;
      for (const name of held) if (!states.has(name) && !this.running.has(name)) n++;
    }
    this.sized = { version: this.version, n };
    return n;
  }

  /** A group's record over the shards (see {@link mergeGroupStates}), or undefined: none holds one. */
  state(name: string): GroupState | undefined {
    if (this.parts.length === 1) return this.parts[0].states.get(name);
    return mergeGroupStates(
      this.parts.map((p) => p.states.get(name)),
      this.ownShard(name),
    );
  }

  /** The submitted time of a group's oldest waiting job over the shards (ms), if known. */
  private oldestOf(name: string): number | undefined {
    let min: number | undefined;
    for (const p of this.parts) {
      const at = p.oldest.get(name);
      if (at !== undefined && (min === undefined || at < min)) min = at;
    }
    return min;
  }

  /** Resolves once the index was loaded (starting the load on first call). */
  ready(): Promise<void> {
    this.loading ??= Promise.all([
      ...this.parts.map((p) => readGroupStates(this.client, p.key)),
      ...this.parts.map((_, i) => this.loadHeld(i)),
    ]).then(
      (all) => {
        all.slice(0, this.parts.length).forEach((states, i) => {
          for (const [name, state] of states as Map<string, GroupState>) this.parts[i].states.set(name, state);
        });
        this.loaded = true;
        this.version++;
      },
      (err: unknown) => {
        this.loading = undefined;
        throw err;
      },
    );
    return this.loading;
  }

  /** The first load's round of shard `shard`'s held sweep, in bounded steps. */
  private async loadHeld(shard: number): Promise<void> {
    if (!this.heldStep) return;
    const part = this.parts[shard];
    let cursor = '0';
    for (let step = 0; step < MAX_LOAD_STEPS; step++) {
      const r = await this.heldStep(shard, cursor);
      for (const name of r.groups) part.held.add(name);
      cursor = r.cursor;
      if (cursor === '0' || cursor === '') break;
    }
    // (a load cut short goes on from where it stopped, with the ticks' steps)
    part.heldNext = cursor === '' ? '0' : cursor;
    part.heldRound = cursor === '0' ? new Set() : new Set(part.held);
  }

  /** The cursor shard `shard`'s next held sweep starts from (undefined until the first load is done). */
  heldCursor(shard: number): string | undefined {
    return this.loaded && this.heldStep ? this.parts[shard].heldNext : undefined;
  }

  /** Takes a step of shard `shard`'s held sweep: the groups met, and the cursor to go on from ('0': the round is over). */
  sweptHeld(shard: number, groups: readonly string[], cursor: string): void {
    if (!this.loaded || cursor === '') return;
    const part = this.parts[shard];
    for (const name of groups) {
      if (!part.held.has(name)) {
        part.held.add(name);
        this.version++;
      }
      part.heldRound.add(name);
    }
    part.heldNext = cursor;
    if (cursor === '0') {
      // A group the whole round did not meet holds no delayed or finished job now.
      if (part.heldRound.size !== part.held.size) this.version++;
      part.held = part.heldRound;
      part.heldRound = new Set();
    }
  }

  /** Takes a step of shard `shard`'s sweep: the records read, and the cursor to go on from ('0': the round is over). */
  swept(shard: number, entries: Array<[string, GroupState]>, cursor: string): void {
    if (!this.loaded || cursor === '') return;
    const part = this.parts[shard];
    for (const [name, state] of entries) {
      part.states.set(name, state);
      part.round.add(name);
    }
    if (entries.length) this.version++;
    part.next = cursor;
    if (cursor === '0') {
      // A group the whole round did not see is gone.
      for (const name of part.states.keys()) {
        if (!part.round.has(name)) {
          part.states.delete(name);
          part.oldest.delete(name);
        }
      }
      part.round = new Set();
      this.version++;
    }
  }

  /** The cursor shard `shard`'s next oldest-wait sweep starts from (undefined until the first load is done). */
  oldestCursor(shard: number): string | undefined {
    return this.loaded ? this.parts[shard].oldestNext : undefined;
  }

  /** Takes a step of shard `shard`'s oldest-wait sweep: each group's oldest waiting job (ms), and the cursor to go on from. */
  sweptOldest(shard: number, entries: Array<[string, number | undefined]>, cursor: string): void {
    if (!this.loaded || cursor === '') return;
    const part = this.parts[shard];
    for (const [name, oldest] of entries) setOldest(part, name, oldest);
    if (entries.length) this.version++;
    part.oldestNext = cursor;
  }

  /**
   * Notes a group's records and oldest waiting jobs read fresh (by a page), by shard. A group
   * that no shard holds and the index does not know is left out (a page that found nothing).
   */
  update(name: string, rows: ReadonlyArray<{ state?: GroupState; oldest?: number }>): void {
    if (!this.has(name) && rows.every((r) => !r.state)) return;
    rows.forEach((row, i) => {
      const part = this.parts[i];
      if (row.state) part.states.set(name, row.state);
      else part.states.delete(name);
      setOldest(part, name, row.oldest);
    });
    this.version++;
  }

  /**
   * Notes the runs in progress of every group, as a groups page read them. Answers whether the
   * page's order may have changed (a group came or went, or a count changed).
   */
  setRunning(running: Map<string, number>): boolean {
    let changed = running.size !== this.running.size;
    if (!changed) for (const [name, n] of running) if (this.running.get(name) !== n) changed = true;
    this.running = running;
    if (changed) this.version++;
    return changed;
  }

  /** Whether the index holds a group. */
  has(name: string): boolean {
    return this.running.has(name) || this.parts.some((p) => p.states.has(name) || p.held.has(name));
  }

  /** A page of group names in the order of `sort` (descending for numbers, ascending for names). */
  page(sort: GroupSort, desc: boolean, offset: number, limit: number): string[] {
    const names = this.order(sort);
    if (desc === (sort === 'group')) {
      const n = names.length;
      const out: string[] = [];
      for (let i = n - 1 - offset; i >= 0 && out.length < limit; i--) out.push(names[i]);
      return out;
    }
    return names.slice(offset, offset + limit);
  }

  private order(sort: GroupSort): string[] {
    const cached = this.sorted.get(sort);
    const now = Date.now();
    const large = this.parts.reduce((n, p) => n + p.states.size, 0) > SMALL_INDEX;
    if (cached && (cached.version === this.version || (large && now - cached.at < SORT_MAX_AGE_MS))) {
      return cached.names;
    }
    const names = this.names();
    if (sort === 'group') names.sort();
    else {
      const state = (n: string) => this.state(n) ?? EMPTY_GROUP;
      const value =
        sort === 'waiting'
          ? (n: string) => waitingOf(state(n))
          : sort === 'running'
            ? (n: string) => this.running.get(n) ?? 0
            : sort === 'oldest'
              ? // (the longest wait first in descending order; groups with nothing waiting last)
                (n: string) => -(this.oldestOf(n) ?? Number.POSITIVE_INFINITY)
              : (n: string) => (state(n) as Record<string, number>)[sort] ?? 0;
      const values = new Map(names.map((n) => [n, value(n)]));
      names.sort((a, b) => values.get(b)! - values.get(a)! || (a < b ? -1 : a > b ? 1 : 0));
    }
    this.sorted.set(sort, { version: this.version, at: now, names });
    return names;
  }
}

function setOldest(part: ShardPart, name: string, oldest: number | undefined): void {
  if (oldest === undefined) part.oldest.delete(name);
  else part.oldest.set(name, oldest);
}
