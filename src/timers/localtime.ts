/**
 * Broken-down wall-clock time and its conversion to and from instants, with
 * the semantics of glibc's localtime_r/mktime (tm_isdst = -1) that systemd's
 * calendar code relies on: out-of-range fields are carried over, a wall time
 * in a DST gap moves forward by the gap, and a wall time that occurs twice
 * resolves to the offset used by the previous conversion; an explicit
 * daylight-saving flag that does not hold at that wall time borrows the offset
 * of the nearest time where it does.
 */
import { zoneOffset } from './zone.js';

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

function fieldsAsUtc(tm: Tm): number {
  const d = new Date(0);
  d.setUTCFullYear(tm.year, tm.mon, tm.mday);
  d.setUTCHours(tm.hour, tm.min, tm.sec, 0);
  return d.getTime() / 1000;
}

function utcFields(secs: number): { tm: Tm; wday: number } {
  const d = new Date(secs * 1000);
  return {
    tm: {
      year: d.getUTCFullYear(),
      mon: d.getUTCMonth(),
      mday: d.getUTCDate(),
      hour: d.getUTCHours(),
      min: d.getUTCMinutes(),
      sec: d.getUTCSeconds(),
      isdst: 0,
    },
    wday: d.getUTCDay(),
  };
}

/**
 * A wall clock in one zone (or UTC when `zone` is null). It carries the
 * offset of its last conversion, as glibc's mktime does, to resolve wall
 * times that occur twice.
 */
export class WallClock {
  private lastOffset = 0;

  constructor(readonly zone: string | null) {}

  private offset(t: number): number {
    return this.zone === null ? 0 : zoneOffset(this.zone, t);
  }

  /** Whether `t` is in daylight-saving time: its offset exceeds the year's standard offset. */
  private isDst(t: number): number {
    if (this.zone === null) return 0;
    const year = new Date(t * 1000).getUTCFullYear();
    const jan = Date.UTC(year, 0, 1) / 1000;
    const jul = Date.UTC(year, 6, 1) / 1000;
    const standard = Math.min(this.offset(jan), this.offset(jul));
    return this.offset(t) > standard ? 1 : 0;
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
