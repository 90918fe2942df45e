/**
 * Next-elapse search for calendar events, following systemd 252's algorithm
 * (field by field, carrying over with mktime normalization, and its step past a
 * result that is not after the start) so that DST gaps
 * and overlaps, month ends and leap days give the same answers.
 */
import { type CalendarSpec, type Chain, MAX_YEAR, USEC_PER_SEC } from './calendar-spec.js';
import { type Tm, WallClock } from './localtime.js';
import { offsetLookup } from './zone.js';

/** Largest instant systemd accepts as a base time (year 9999), in microseconds. */
// biome-ignore lint/correctness/noPrecisionLoss: systemd's constant kept as written; as a double it is one microsecond larger (253402214400000000).
const USEC_FORMATTABLE_MAX = 253402214399999999;
/** systemd gives up after this many search steps (and so do we: every search is bounded). */
const MAX_STEPS = 1000;

const BITS_WEEKDAYS = 127;

/** Last-day form: the day `day` days before the end of tm's month (1 = last day). */
function endOfMonth(clock: WallClock, tm: Tm, day: number): number {
  const r = clock.mktime({ ...tm, mon: tm.mon + 1, mday: 1 - day });
  if (r.t < 0 || r.tm.mon !== ((tm.mon % 12) + 12) % 12) return -1;
  return r.tm.mday;
}

/**
 * Finds the smallest value ≥ `val` the chain allows. Returns null when none,
 * else the value (and whether it differs from `val` is up to the caller).
 */
function matchChain(spec: CalendarSpec, chain: Chain, isDay: boolean, clock: WallClock, tm: Tm, val: number): number | null {
  if (!chain) return val;
  let best: number | null = null;
  for (const c of chain) {
    let start = c.start;
    let stop = c.stop;
    if (spec.endOfMonth && isDay) {
      start = endOfMonth(clock, tm, start);
      stop = endOfMonth(clock, tm, stop);
      if (stop > 0) [start, stop] = [stop, start];
    }
    if (start >= val) {
      if (best === null || start < best) best = start;
    } else if (c.repeat > 0) {
      const k = start + c.repeat * Math.ceil((val - start) / c.repeat);
      if ((best === null || k < best) && (stop < 0 || k <= stop)) best = k;
    }
  }
  return best;
}

/**
 * 1: fields valid as they are; 0: normalized forward into `tm`, with the unit
 * below the first changed one reset (retry); -1: out of range or backwards.
 */
function withinBounds(clock: WallClock, tm: Tm): number {
  if (tm.year > MAX_YEAR) return -1;
  const r = clock.mktime(tm);
  if (r.t < 0) return -1;
  const n: Tm = { ...r.tm };
  let cmp: number;
  if ((cmp = Math.sign(n.year - tm.year)) !== 0) n.mon = 0;
  else if ((cmp = Math.sign(n.mon - tm.mon)) !== 0) n.mday = 1;
  else if ((cmp = Math.sign(n.mday - tm.mday)) !== 0) n.hour = 0;
  else if ((cmp = Math.sign(n.hour - tm.hour)) !== 0) n.min = 0;
  else if ((cmp = Math.sign(n.min - tm.min)) !== 0) n.sec = 0;
  else cmp = Math.sign(n.sec - tm.sec);
  if (cmp < 0) return -1; // refuse to go backwards
  if (cmp > 0) Object.assign(tm, n);
  return cmp === 0 ? 1 : 0;
}

function matchesWeekday(bits: number, clock: WallClock, tm: Tm): boolean {
  if (bits < 0 || bits >= BITS_WEEKDAYS) return true;
  const r = clock.mktime(tm);
  if (r.t < 0) return false;
  const k = r.wday === 0 ? 6 : r.wday - 1;
  return (bits & (1 << k)) !== 0;
}

/** Compares two wall times field by field, year down to second (systemd's tm_compare). */
function compareFields(a: Tm, b: Tm): number {
  return (
    Math.sign(a.year - b.year) ||
    Math.sign(a.mon - b.mon) ||
    Math.sign(a.mday - b.mday) ||
    Math.sign(a.hour - b.hour) ||
    Math.sign(a.min - b.min) ||
    Math.sign(a.sec - b.sec)
  );
}

/** What {@link findNextElapse} answers when its search gave up after MAX_STEPS (systemd: "Infinite loop in calendar calculation"). */
export const STUCK = 'stuck';

/** The fields the search zeroes from (see resetBelow). */
type Level = 'month' | 'day' | 'hour' | 'min' | 'sec';

/**
 * The first elapse at or after `fromUs + 1` microseconds, in microseconds
 * since the epoch, or null when the event never elapses again (systemd's
 * search stops at the end of year 2199), or STUCK when systemd's search gives
 * up at a DST change.
 */
export function findNextElapse(spec: CalendarSpec, zone: string | null, afterUs: number): number | null | typeof STUCK {
  if (!(afterUs <= USEC_FORMATTABLE_MAX) || afterUs < -1) return null;
  const clock = new WallClock(spec.utc ? null : zone);
  const us = afterUs + 1;
  const t0 = Math.floor(us / USEC_PER_SEC);
  let tmUsec = us - t0 * USEC_PER_SEC;
  const c: Tm = clock.localtime(t0);
  const start: Tm = { ...c };
  const startUsec = tmUsec;
  // Once a candidate was found not after the start (a DST change made the wall clock repeat or
  // skip), systemd keeps mktime's own DST flag from then on instead of asking it to find out.
  let keepDst = false;
  const resetBelow = (level: Level): void => {
    switch (level) {
      case 'month':
        c.mon = 0; // falls through
      case 'day':
        c.mday = 1; // falls through
      case 'hour':
        c.hour = 0; // falls through
      case 'min':
        c.min = 0; // falls through
      case 'sec':
        c.sec = 0;
        tmUsec = 0;
    }
  };
  // One step of the search, for field `field` of `c` (held as the chain's value less `base`):
  // it moves to the chain's first match at or after it, zeroing the fields `below` and under;
  // when none matches or the date is out of bounds, field `carry` above moves on instead, zeroing
  // `level` and under. True when the search starts again from the top.
  const advance = (
    chain: Chain,
    isDay: boolean,
    field: 'mon' | 'mday' | 'hour' | 'min',
    base: number,
    level: Level,
    below: Level,
    carry: 'year' | 'mon' | 'mday' | 'hour',
  ): boolean => {
    const v = matchChain(spec, chain, isDay, clock, c, c[field] + base);
    if (v !== null && v - base !== c[field]) {
      c[field] = v - base;
      resetBelow(below);
    }
    const r = v === null ? -1 : withinBounds(clock, c);
    if (r < 0) {
      c[carry]++;
      resetBelow(level);
    }
    return r <= 0;
  };
  for (let steps = 0; steps < MAX_STEPS; steps++) {
    // Normalize the current date; from here on let mktime find out about DST.
    Object.assign(c, clock.mktime(c).tm);
    if (!keepDst) c.isdst = -1;

    let v = matchChain(spec, spec.year, false, clock, c, c.year);
    if (v === null) return null;
    if (v !== c.year) {
      c.year = v;
      resetBelow('month');
    }
    if (withinBounds(clock, c) <= 0) return null;

    if (advance(spec.month, false, 'mon', 1, 'month', 'day', 'year')) continue;
    if (advance(spec.day, true, 'mday', 0, 'day', 'hour', 'mon')) continue;

    if (!matchesWeekday(spec.weekdays, clock, c)) {
      c.mday++;
      resetBelow('hour');
      continue;
    }

    if (advance(spec.hour, false, 'hour', 0, 'hour', 'min', 'mday')) continue;
    if (advance(spec.minute, false, 'min', 0, 'min', 'sec', 'hour')) continue;

    v = matchChain(spec, spec.usec, false, clock, c, c.sec * USEC_PER_SEC + tmUsec);
    if (v !== null) {
      tmUsec = v % USEC_PER_SEC;
      c.sec = Math.floor(v / USEC_PER_SEC);
    }
    let r: number;
    if (v === null || (r = withinBounds(clock, c)) < 0) {
      c.min++;
      resetBelow('sec');
      continue;
    }
    if (r === 0) continue;

    // Not after the start (wall fields compared, as systemd does): stuck at a DST change, so move
    // on an hour and let mktime place the change.
    const cmp = compareFields(start, c) || Math.sign(startUsec - (tmUsec + 1));
    if (cmp >= 0) {
      keepDst = true;
      c.hour++;
      continue;
    }

    const t = clock.mktime(c).t;
    if (t < 0) return null;
    return t * USEC_PER_SEC + tmUsec;
  }
  return STUCK;
}

/** Minutes after a stuck start that the search starts again from: 1, 3, 7, … up to about 3 days. */
const RETRY_MINUTES = [1, 3, 7, 15, 31, 63, 127, 255, 511, 1023, 2047, 4095];

/**
 * {@link findNextElapse}, going on where systemd would give up: from a start
 * where its search gets stuck (it does at some DST changes at midnight), the
 * answer is systemd's own from the first of a few later starts where it is not.
 * The test fixtures record those later answers from systemd-analyze too.
 */
export function nextElapseMicros(spec: CalendarSpec, zone: string | null, afterUs: number): number | null {
  const r = strictlyAfter(findNextElapse(spec, zone, afterUs), zone, afterUs);
  if (r !== STUCK) return r;
  for (const m of RETRY_MINUTES) {
    const again = strictlyAfter(findNextElapse(spec, zone, afterUs + m * 60 * USEC_PER_SEC), zone, afterUs);
    if (again !== STUCK) return again;
  }
  return null;
}

/**
 * An elapse `r` not after the start happens when the start lies in the second pass of a repeated
 * wall-clock hour (the clocks went back) and the wall time found was placed in the first pass:
 * systemd gives the same wall time's second pass then (Africa/Casablanca, `*:0/15`, after
 * 2026-02-15 02:07Z: 02:15Z, not 01:15Z). Otherwise the search is stuck.
 */
function strictlyAfter(r: number | null | typeof STUCK, zone: string | null, afterUs: number): number | null | typeof STUCK {
  if (r === null || r === STUCK || r > afterUs) return r;
  if (zone === null) return STUCK;
  const offsetOf = offsetLookup(zone);
  const sec = Math.floor(r / USEC_PER_SEC);
  const fold = offsetOf(sec) - offsetOf(Math.floor(afterUs / USEC_PER_SEC));
  const later = sec + fold;
  if (fold > 0 && later + offsetOf(later) === sec + offsetOf(sec) && r + fold * USEC_PER_SEC > afterUs) {
    return r + fold * USEC_PER_SEC;
  }
  return STUCK;
}
