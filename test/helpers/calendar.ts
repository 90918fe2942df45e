/**
 * What the calendar tests and their fixture generators share: systemd-analyze's way of listing
 * elapses, the unusual DST zones, and where a zone's offset changes.
 */
import { parseCalendar } from '../../src/timers/calendar.js';
import { zoneOffset } from '../../src/timers/zone.js';

const HOUR = 3_600_000;

/** The next `n` elapses of `spec` in `tz` after `base`, iterated as systemd-analyze does, then truncated to seconds as it prints them. */
export function elapses(spec: string, tz: string, base: string, n: number): string[] {
  const timer = parseCalendar(spec, tz);
  const out: string[] = [];
  let us: number | null = Date.parse(base) * 1000;
  for (let i = 0; i < n; i++) {
    us = timer.nextMicros(us);
    if (us === null) break;
    out.push(new Date(Math.floor(us / 1_000_000) * 1000).toISOString().replace('.000Z', 'Z'));
  }
  return out;
}

/** Zones whose changes are unusual: of 30 minutes, at midnight, at 02:45, of two hours. */
export const UNUSUAL_ZONES = [
  'Australia/Lord_Howe',
  'America/Santiago',
  'America/Havana',
  'Africa/Cairo',
  'Asia/Beirut',
  'Pacific/Chatham',
  'Antarctica/Troll',
];

/**
 * The instants (ms, on the minute) at which `zone`'s UTC offset changes between `from` and `to`:
 * an hourly scan, then a bisection to the minute.
 */
export function offsetChanges(zone: string, from: number, to: number): number[] {
  const offset = (ms: number) => zoneOffset(zone, Math.floor(ms / 1000));
  const found: number[] = [];
  let prev = offset(from);
  for (let t = from + HOUR; t <= to; t += HOUR) {
    const o = offset(t);
    if (o === prev) continue;
    let lo = t - HOUR;
    let hi = t;
    while (hi - lo > 60_000) {
      const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
      if (offset(mid) === prev) lo = mid;
      else hi = mid;
    }
    found.push(hi);
    prev = o;
  }
  return found;
}
