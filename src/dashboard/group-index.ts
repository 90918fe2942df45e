/**
 * The dashboard's index of a queue's groups, for the groups page's paging and sorting at any
 * number of groups without a request reading the whole `groups` hash: the index is loaded once
 * in the background (HSCAN, a thousand at a time) and then kept by the shared reader's sweep,
 * a step of it each tick (see reader.ts). It also holds the runs in progress per group, as the
 * last groups page read them (they are as many as the executors' slots): a group with runs and
 * nothing waiting has no record in the hash, and is listed from them. The order of a page comes
 * from the index (as of the last sweep); the values shown are read fresh for the page's groups.
 */
import type { Redis } from 'ioredis';
import { EMPTY_GROUP, type GroupState, readGroupStates } from '../redis/group-state.js';

/** A column the groups page sorts on: a field of the record, the runs in progress, or the name. */
export type GroupSort = 'group' | 'waiting' | 'running' | 'oldest' | 'stuck' | 'limit' | 'weight' | 'paused' | string;

/** Runnable waiting jobs of a record: its high, low and preferred lists (less the stuck ones). */
export function waitingOf(g: GroupState): number {
  return g.nh + g.nl + Math.max(0, g.nr - g.stuck);
}

/** Sorted orders of a large index are recomputed at most this often while it changes (ms). */
const SORT_MAX_AGE_MS = 5000;
/** An index this small is sorted again whenever it changed. */
const SMALL_INDEX = 10_000;

export class GroupIndex {
  private readonly states = new Map<string, GroupState>();
  /**
   * Submitted time of each group's oldest waiting job (ms), as the oldest-wait sweep (a slower
   * round of its own: it reads up to six keys a group) or a page last read it.
   */
  private readonly oldest = new Map<string, number>();
  /** Runs in progress per group (those with some), as the last groups page read them. */
  private running = new Map<string, number>();
  /** Names seen in the current round of the sweep. */
  private round = new Set<string>();
  private next = '0';
  private oldestNext = '0';
  private loading?: Promise<void>;
  private loaded = false;
  private version = 0;
  private readonly sorted = new Map<string, { version: number; at: number; names: string[] }>();

  constructor(
    private readonly client: Redis,
    private readonly key: string,
  ) {}

  /** The cursor the next tick's sweep starts from (undefined until the first load is done). */
  get cursor(): string | undefined {
    return this.loaded ? this.next : undefined;
  }

  /** Groups in the index: those with a record, and those with runs in progress only. */
  get size(): number {
    let n = this.states.size;
    for (const name of this.running.keys()) if (!this.states.has(name)) n++;
    return n;
  }

  /** Resolves once the index was loaded (starting the load on first call). */
  ready(): Promise<void> {
    this.loading ??= readGroupStates(this.client, this.key).then(
      (all) => {
        for (const [name, state] of all) this.states.set(name, state);
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

  /** Takes a step of the sweep: the records read, and the cursor to go on from ('0': the round is over). */
  swept(entries: Array<[string, GroupState]>, cursor: string): void {
    if (!this.loaded || cursor === '') return;
    for (const [name, state] of entries) {
      this.states.set(name, state);
      this.round.add(name);
    }
    if (entries.length) this.version++;
    this.next = cursor;
    if (cursor === '0') {
      // A group the whole round did not see is gone.
      for (const name of this.states.keys()) {
        if (!this.round.has(name)) {
          this.states.delete(name);
          this.oldest.delete(name);
        }
      }
      this.round = new Set();
      this.version++;
    }
  }

  /** The cursor the next tick's oldest-wait sweep starts from (undefined until the first load is done). */
  get oldestCursor(): string | undefined {
    return this.loaded ? this.oldestNext : undefined;
  }

  /** Takes a step of the oldest-wait sweep: each group's oldest waiting job (ms), and the cursor to go on from. */
  sweptOldest(entries: Array<[string, number | undefined]>, cursor: string): void {
    if (!this.loaded || cursor === '') return;
    for (const [name, oldest] of entries) this.setOldest(name, oldest);
    if (entries.length) this.version++;
    this.oldestNext = cursor;
  }

  /** Notes a group's record and oldest waiting job read fresh (by a page). */
  update(name: string, state: GroupState | undefined, oldest: number | undefined): void {
    if (state) this.states.set(name, state);
    else this.states.delete(name);
    this.setOldest(name, oldest);
    this.version++;
  }

  private setOldest(name: string, oldest: number | undefined): void {
    if (oldest === undefined) this.oldest.delete(name);
    else this.oldest.set(name, oldest);
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
    return this.states.has(name) || this.running.has(name);
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
    if (cached && (cached.version === this.version || (this.states.size > SMALL_INDEX && now - cached.at < SORT_MAX_AGE_MS))) {
      return cached.names;
    }
    const names = [...this.states.keys()];
    for (const name of this.running.keys()) if (!this.states.has(name)) names.push(name);
    if (sort === 'group') names.sort();
    else {
      const state = (n: string) => this.states.get(n) ?? EMPTY_GROUP;
      const value =
        sort === 'waiting'
          ? (n: string) => waitingOf(state(n))
          : sort === 'running'
            ? (n: string) => this.running.get(n) ?? 0
            : sort === 'oldest'
              ? // (the longest wait first in descending order; groups with nothing waiting last)
                (n: string) => -(this.oldest.get(n) ?? Number.POSITIVE_INFINITY)
              : (n: string) => (state(n) as Record<string, number>)[sort] ?? 0;
      const values = new Map(names.map((n) => [n, value(n)]));
      names.sort((a, b) => values.get(b)! - values.get(a)! || (a < b ? -1 : a > b ? 1 : 0));
    }
    this.sorted.set(sort, { version: this.version, at: now, names });
    return names;
  }
}
