/**
 * The groups page's fairness view: the share of the runs each group had ended over a window the
 * operator chooses (the last minute, 15 minutes or hour), read from the queue's per-group
 * history (`hist:g:<minute>`, src/redis/history.ts), summed over the shards. The window is one of
 * {@link FAIRNESS_WINDOWS} (any other value of the request's parameter reads as the default);
 * each read scans at most {@link FAIRNESS_FIELDS} fields a shard, and a window's sums are kept
 * {@link FAIRNESS_CACHE_MS}, so however often the page is asked for, its Redis work is bounded.
 */
import { minuteOf } from '../redis/history.js';
import type { HistoryStore } from '../redis/history-store.js';

/** The windows an operator can choose, by the value of the `fair` parameter: their minutes. */
export const FAIRNESS_WINDOWS = { '1m': 1, '15m': 15, '1h': 60 } as const;
export type FairnessWindow = keyof typeof FAIRNESS_WINDOWS;
/** The window shown when the request names none (or one that is not offered). */
export const DEFAULT_FAIRNESS_WINDOW: FairnessWindow = '15m';
/** Per-group fields read at most a shard for one window's sums. */
export const FAIRNESS_FIELDS = 20_000;
/** How long a window's sums are kept before a request reads them again (ms). */
export const FAIRNESS_CACHE_MS = 5000;

/** The window a request's `fair` parameter names (the default for anything else). */
export function fairnessWindow(param: string | null): FairnessWindow {
  return param !== null && Object.hasOwn(FAIRNESS_WINDOWS, param) ? (param as FairnessWindow) : DEFAULT_FAIRNESS_WINDOW;
}

/** One window's sums over the shards. */
export interface FairnessRead {
  window: FairnessWindow;
  /** Start of the first minute summed (ms, server clock). */
  since: number;
  /** Runs ended per group. */
  shares: Map<string, number>;
  /** Their sum. */
  runs: number;
  /** False when some shard's read stopped at its bound: the shares are those of a part of the groups. */
  complete: boolean;
}

/** A queue's fairness reads, with their cache. */
export class Fairness {
  private readonly cache = new Map<FairnessWindow, { at: number; read: FairnessRead }>();

  constructor(
    private readonly stores: readonly HistoryStore[],
    private readonly local: () => number = Date.now,
  ) {}

  /**
   * The window's sums as of server time `now` (ms): the minutes from `window` minutes before the
   * current one to the current one (so "the last minute" spans one to two minutes).
   */
  async read(window: FairnessWindow, now: number): Promise<FairnessRead> {
    const kept = this.cache.get(window);
    if (kept && this.local() - kept.at < FAIRNESS_CACHE_MS) return kept.read;
    const to = minuteOf(now);
    const from = to - FAIRNESS_WINDOWS[window];
    const parts = await Promise.all(this.stores.map((s) => s.groupMinutes(from, to, FAIRNESS_FIELDS)));
    const shares = new Map<string, number>();
    let runs = 0;
    for (const p of parts) {
      for (const [group, n] of p.counts) {
        shares.set(group, (shares.get(group) ?? 0) + n);
        runs += n;
      }
    }
    const read = { window, since: from * 60_000, shares, runs, complete: parts.every((p) => p.complete) };
    this.cache.set(window, { at: this.local(), read });
    return read;
  }
}
