/** How the CLI prints instants: in a time zone (a task's, or `--tz`), or in UTC with `--utc`. */
import { zoneOffset } from '../timers/zone.js';

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/**
 * `ms` as ISO-8601 with the offset of `zone` at that instant (`2026-03-29T03:00:00+02:00`),
 * milliseconds only when there are some; in UTC (`toISOString`) when `zone` is absent or UTC.
 */
export function zonedIso(ms: number, zone: string | undefined): string {
  if (!zone || zone === 'UTC') return new Date(ms).toISOString();
  const offset = zoneOffset(zone, Math.floor(ms / 1000));
  const wall = new Date(ms + offset * 1000)
    .toISOString()
    .slice(0, -1)
    .replace(/\.000$/, '');
  const abs = Math.abs(offset);
  const seconds = abs % 60 ? `:${pad(abs % 60)}` : '';
  return `${wall}${offset < 0 ? '-' : '+'}${pad(Math.floor(abs / 3600))}:${pad(Math.floor(abs / 60) % 60)}${seconds}`;
}

/** A formatter of optional instants in `zone`, or in UTC when `utc` is set; absent stays absent. */
export function timeFormat(zone: string | undefined, utc: boolean | undefined): (ms: number | undefined) => string | undefined {
  return (ms) => (ms === undefined ? undefined : zonedIso(ms, utc ? undefined : zone));
}
