/**
 * Exclusions: days and wall-clock windows during which a timer's elapses are skipped, read in a
 * time zone (so across DST changes a window keeps its wall-clock hours).
 *
 * Grammar of one exclusion:
 * - `YYYY-MM-DD..YYYY-MM-DD`: whole days, both ends included (`2026-12-24..2026-12-26`);
 * - `<date> [HH:MM[:SS]..HH:MM[:SS]]`: the days a systemd calendar event's date part matches
 *   (weekdays and `year-month-day`, as in `*-12-25`, `Sat,Sun`, `Mon..Fri *-*-1..7`,
 *   `2026-12-24`), whole days or, with a window, from its start (included) to its end (excluded).
 *   A window whose end is not after its start runs past midnight into the next day
 *   (`Sat 22:00..02:00`); `24:00` ends at midnight. A bare window (`02:00..04:00`) is every day.
 */

import { TimerSyntaxError } from '../errors.js';
import { type CalendarSpec, type Chain, parseCalendarSpec } from './calendar-spec.js';
import { offsetLookup } from './zone.js';

/** Parsed exclusions: `excludes(t)` says whether the instant `t` (ms) falls in one of them. */
export interface Exclusions {
  readonly specs: readonly string[];
  excludes(t: number): boolean;
  /**
   * The end of the excluded stretch instant `t` (ms) falls in: the first instant after it that no
   * exclusion covers (windows that touch or overlap are one stretch, followed for at most
   * `MAX_STRETCH_WINDOWS` windows), or `t` itself when `t` is not excluded or the end is not
   * certain (a zone change at the window's end): the caller then steps past `t` elapse by elapse.
   */
  excludedUntil(t: number): number;
}

/** Most windows {@link Exclusions.excludedUntil} follows through one stretch (days of a yearlong range, say). */
export const MAX_STRETCH_WINDOWS = 1000;

interface Wall {
  year: number;
  month: number;
  day: number;
  /** Monday 0 … Sunday 6. */
  weekday: number;
  /** Seconds since the wall clock's midnight. */
  second: number;
}

type DayTest = (w: Wall) => boolean;
interface Rule {
  day: DayTest;
  /** Window in seconds since midnight, or null for the whole day. */
  window: { from: number; to: number } | null;
}

const RANGE = /^(\d{4})-(\d{2})-(\d{2})\.\.(\d{4})-(\d{2})-(\d{2})$/;
const WINDOW = /^(?:(.*)\s+)?(\d{1,2}):(\d{2})(?::(\d{2}))?\.\.(\d{1,2}):(\d{2})(?::(\d{2}))?$/;
const DAY = 86_400;

/** The wall-clock fields of a day number (days since 1970-01-01). */
function civil(days: number): { year: number; month: number; day: number; weekday: number } {
  const d = new Date(days * DAY * 1000);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), weekday: (d.getUTCDay() + 6) % 7 };
}

function chainHas(chain: Chain, v: number): boolean {
  if (!chain) return true;
  for (const c of chain) {
    if (v === c.start) return true;
    if (v < c.start || (c.stop >= 0 && v > c.stop)) continue;
    if (c.repeat > 0 ? (v - c.start) % c.repeat === 0 : c.stop >= 0) return true;
  }
  return false;
}

function dateTest(c: CalendarSpec): DayTest {
  return (w) =>
    (c.weekdays < 0 || c.weekdays >= 127 || (c.weekdays & (1 << w.weekday)) !== 0) &&
    chainHas(c.year, w.year) &&
    chainHas(c.month, w.month) &&
    chainHas(c.day, w.day);
}

function seconds(spec: string, h: string, m: string, s: string | undefined, end: boolean): number {
  const v = Number(h) * 3600 + Number(m) * 60 + Number(s ?? 0);
  if (Number(m) > 59 || Number(s ?? 0) > 59 || v > DAY || (v === DAY && !end)) {
    throw new TimerSyntaxError(spec, 0, 'window', `"${h}:${m}${s ? `:${s}` : ''}" is not a time of day`);
  }
  return v;
}

function dayNumber(spec: string, y: string, m: string, d: string): number {
  const t = Date.UTC(Number(y), Number(m) - 1, Number(d));
  const back = new Date(t);
  if (back.getUTCMonth() + 1 !== Number(m) || back.getUTCDate() !== Number(d)) {
    throw new TimerSyntaxError(spec, 0, 'date', `${y}-${m}-${d} is not a date`);
  }
  return t / 1000 / DAY;
}

function parseOne(raw: string): Rule {
  const spec = raw.trim();
  if (!spec) throw new TimerSyntaxError(raw, 0, 'exclusion', 'empty');
  const range = RANGE.exec(spec);
  if (range) {
    const from = dayNumber(spec, range[1], range[2], range[3]);
    const to = dayNumber(spec, range[4], range[5], range[6]);
    if (to < from) throw new TimerSyntaxError(spec, 0, 'date range', 'ends before it begins');
    return {
      day: (w) => {
        const n = Date.UTC(w.year, w.month - 1, w.day) / 1000 / DAY;
        return n >= from && n <= to;
      },
      window: null,
    };
  }
  let datePart = spec;
  let window: Rule['window'] = null;
  const win = WINDOW.exec(spec);
  if (win) {
    datePart = win[1] ?? '';
    window = { from: seconds(spec, win[2], win[3], win[4], false), to: seconds(spec, win[5], win[6], win[7], true) };
    if (window.from === window.to) throw new TimerSyntaxError(spec, 0, 'window', 'is empty (it ends where it begins)');
  }
  if (datePart === '') return { day: () => true, window };
  if (datePart.includes(':')) {
    throw new TimerSyntaxError(spec, 0, 'exclusion', 'a time of day goes in a window such as "02:00..04:00"');
  }
  const c = parseCalendarSpec(datePart);
  if (c.utc || c.timezone) throw new TimerSyntaxError(spec, 0, 'exclusion', "is read in the task's time zone: name none");
  if (c.endOfMonth) throw new TimerSyntaxError(spec, 0, 'exclusion', '"~" (days from the end of the month) is not supported');
  return { day: dateTest(c), window };
}

/**
 * Parses exclusions read in `timezone` (IANA; default UTC).
 * @throws {@link TimerSyntaxError} naming the bad exclusion.
 */
export function parseExclusions(specs: readonly string[], timezone?: string): Exclusions {
  const rules = specs.map(parseOne);
  const offset = timezone ? offsetLookup(timezone) : () => 0;
  const wall = (t: number): Wall => {
    const local = Math.floor(t / 1000) + offset(Math.floor(t / 1000));
    const days = Math.floor(local / DAY);
    return { ...civil(days), second: local - days * DAY };
  };
  /** The UTC instant (s) of local second `local` (seconds since the epoch, wall clock), near instant `near` (s). */
  const utcOf = (local: number, near: number): number => {
    const guess = local - offset(near);
    return local - offset(guess);
  };
  /** The end (s) of the windows of the rules that cover instant `t` (ms), or null when none does. */
  const windowEnd = (t: number): number | null => {
    const sec = Math.floor(t / 1000);
    const w = wall(t);
    const dayStart = Math.floor((sec + offset(sec)) / DAY) * DAY;
    let end: number | null = null;
    const cover = (localEnd: number) => {
      const u = utcOf(localEnd, sec);
      if (end === null || u > end) end = u;
    };
    for (const r of rules) {
      if (!r.window) {
        if (r.day(w)) cover(dayStart + DAY);
        continue;
      }
      const { from, to } = r.window;
      if (from < to) {
        if (w.second >= from && w.second < to && r.day(w)) cover(dayStart + to);
      } else {
        if (w.second >= from && r.day(w)) cover(dayStart + DAY + to);
        if (w.second < to && r.day({ ...civil(dayStart / DAY - 1), second: 0 })) cover(dayStart + to);
      }
    }
    return end;
  };
  const excludes = (t: number): boolean => {
    const w = wall(t);
    let yesterday: Wall | undefined;
    for (const r of rules) {
      if (!r.window) {
        if (r.day(w)) return true;
        continue;
      }
      const { from, to } = r.window;
      if (from < to) {
        if (w.second >= from && w.second < to && r.day(w)) return true;
      } else {
        // past midnight: the evening of a matching day, or the small hours after one
        if (w.second >= from && r.day(w)) return true;
        if (w.second < to) {
          yesterday ??= { ...civil(Math.floor((t / 1000 + offset(Math.floor(t / 1000))) / DAY) - 1), second: 0 };
          if (r.day(yesterday)) return true;
        }
      }
    }
    return false;
  };
  return {
    specs,
    excludes,
    excludedUntil(t: number): number {
      let at = t;
      for (let k = 0; k < MAX_STRETCH_WINDOWS; k++) {
        const end = windowEnd(at);
        if (end === null) break;
        const next = end * 1000;
        // (not past the true end: the second before it is still excluded)
        if (next <= at || !excludes(next - 1000)) return at;
        at = next;
      }
      return at;
    },
  };
}
