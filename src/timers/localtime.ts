/**
 * Broken-down wall-clock time and its conversion to and from instants, with
 * the semantics of glibc's localtime_r/mktime (tm_isdst = -1) that systemd's
 * calendar code relies on: out-of-range fields are carried over, a wall time
 * in a DST gap moves forward by the gap, and a wall time that occurs twice
 * resolves to the offset used by the previous conversion; an explicit
 * daylight-saving flag that does not hold at that wall time borrows the offset
 * of the nearest time where it does.
 */
import { offsetLookup } from './zone.js';

/** Broken-down time; `mon` is 0-based. Fields may be out of range before normalization. */
export interface Tm {
  year: number;
  mon: number;
  mday: number;
  hour: number;
  min: number;
  sec: number;
  /** Daylight-saving flag as in struct tm: 1, 0, or -1/undefined for "find out". */
  isdst?: number;
}

/** Result of {@link WallClock.mktime}. */
export interface MktimeResult {
  /** Seconds since the Unix epoch. */
  t: number;
  /** Normalized fields (the wall time of `t`). */
  tm: Tm;
  /** Day of week, 0 = Sunday. */
  wday: number;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (month 1-12). */
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Seconds since the epoch of the fields read as UTC, carrying out-of-range values over. */
function fieldsAsUtc(tm: Tm): number {
  const y = tm.year + Math.floor(tm.mon / 12);
  const m = tm.mon - Math.floor(tm.mon / 12) * 12;
  const days = daysFromCivil(y, m + 1, 1) + tm.mday - 1;
  return days * 86400 + tm.hour * 3600 + tm.min * 60 + tm.sec;
}

/** UTC fields of an instant (seconds since the epoch). */
function utcFields(secs: number): { tm: Tm; wday: number } {
  const days = Math.floor(secs / 86400);
  let rem = secs - days * 86400;
  const hour = Math.floor(rem / 3600);
  rem -= hour * 3600;
  const min = Math.floor(rem / 60);
  const sec = rem - min * 60;
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const mday = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const mon = mp < 10 ? mp + 2 : mp - 10;
  const year = yoe + era * 400 + (mon <= 1 ? 1 : 0);
  return { tm: { year, mon, mday, hour, min, sec, isdst: 0 }, wday: (((days + 4) % 7) + 7) % 7 };
}

/**
 * A wall clock in one zone (or UTC when `zone` is null). It carries the
 * offset of its last conversion, as glibc's mktime does, to resolve wall
 * times that occur twice.
 */
export class WallClock {
  private lastOffset = 0;
  private readonly lookup: ((t: number) => number) | null;
  private readonly standard = new Map<number, number>();

  constructor(readonly zone: string | null) {
    this.lookup = zone === null ? null : offsetLookup(zone);
  }

  private offset(t: number): number {
    return this.lookup === null ? 0 : this.lookup(t);
  }

  /** The standard (non-DST) offset of a year: the smaller of its January and July offsets. */
  private standardOffset(year: number): number {
    let o = this.standard.get(year);
    if (o === undefined) {
      o = Math.min(this.offset(Date.UTC(year, 0, 1) / 1000), this.offset(Date.UTC(year, 6, 1) / 1000));
      this.standard.set(year, o);
    }
    return o;
  }

  /** Whether `t` is in daylight-saving time: its offset exceeds the year's standard offset. */
  private isDst(t: number): number {
    if (this.zone === null) return 0;
    // Year of t, close enough for picking the year's standard offset (Jan 1 ± a day is harmless).
    const year = 1970 + Math.floor(t / 31_556_952);
    return this.offset(t) > this.standardOffset(year) ? 1 : 0;
  }

  /** Wall-clock fields of the instant `t` (seconds since the epoch). */
  localtime(t: number): Tm {
    const off = this.offset(t);
    this.lastOffset = off;
    const tm = utcFields(t + off).tm;
    tm.isdst = this.isDst(t);
    return tm;
  }

  /** Converts (possibly out-of-range) wall-clock fields to an instant. */
  mktime(tm: Tm): MktimeResult {
    const r = fieldsAsUtc(tm);
    if (this.zone === null) {
      const f = utcFields(r);
      return { t: r, tm: f.tm, wday: f.wday };
    }
    const isdst = tm.isdst ?? -1;
    const before = this.offset(r - 86400);
    const after = this.offset(r + 86400);
    const fits = (o: number): boolean => this.offset(r - o) === o;
    const cands: number[] = [];
    if (fits(before)) cands.push(before);
    if (after !== before && fits(after)) cands.push(after);
    if (cands.length === 0) {
      const here = this.offset(r);
      if (fits(here)) cands.push(here);
    }
    let used: number;
    if (cands.length === 0) {
      // In a gap: move forward by the gap, unless a daylight flag picks the other side.
      // (a gap's two sides are the instants r - before - 86400 and r - after + 86400).
      const sideDst = (o: number, t: number): number => (this.isDst(t) === 1 && this.offset(t) === o ? 1 : 0);
      const beforeDst = sideDst(before, r - before - 86400);
      const afterDst = sideDst(after, r - after + 86400);
      used = isdst >= 0 && afterDst === isdst && beforeDst !== isdst ? after : before;
    } else if (isdst >= 0) {
      const match = cands.find((o) => this.isDst(r - o) === isdst);
      used = match ?? this.borrowOffset(r - cands[0]!, isdst);
    } else if (cands.length === 2) {
      if (cands.includes(this.lastOffset)) used = this.lastOffset;
      else {
        const guess = r - this.lastOffset;
        const [a, b] = [r - cands[0]!, r - cands[1]!];
        used = Math.abs(a - guess) <= Math.abs(b - guess) ? cands[0]! : cands[1]!;
      }
    } else used = cands[0]!;
    const t = r - used;
    this.lastOffset = used;
    const off = this.offset(t);
    const f = utcFields(t + off);
    f.tm.isdst = this.isDst(t);
    return { t, tm: f.tm, wday: f.wday };
  }

  /** Offset of the nearest time (probing a week at a time) whose daylight flag is `isdst`. */
  private borrowOffset(t: number, isdst: number): number {
    const stride = 601200;
    for (let delta = stride; delta < 228_621_600 + stride; delta += stride) {
      for (const ot of [t - delta, t + delta]) {
        if (this.isDst(ot) === isdst) return this.offset(ot);
      }
    }
    return this.offset(t);
  }
}
