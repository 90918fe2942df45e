/** What the calendar tests share: systemd-analyze's way of listing elapses, and the unusual DST zones. */
import { parseCalendar } from '../../src/timers/calendar.js';

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
