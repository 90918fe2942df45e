/** ISO-8601 date-times: parsing, with wall times read in an IANA zone. */
import { TimerSyntaxError } from '../errors.js';
import { WallClock } from './localtime.js';

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Whether `text` looks like an ISO-8601 date-time (a date, `T`, a time). */
export function looksLikeIsoDateTime(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T/i.test(text);
}

/**
 * Parses an ISO-8601 date-time such as `2026-01-01T00:30:00Z`,
 * `2026-01-01T01:30+01:00` or `2026-01-01T00:30` (no offset: a wall time in
 * `timezone`, default UTC; a wall time that occurs twice means the first, one
 * skipped by a DST gap moves forward by the gap). Returns epoch milliseconds.
 * `offset` is where `text` starts in `spec`, for error positions.
 */
export function parseIsoInstant(
  text: string,
  timezone: string | undefined,
  spec: string,
  offset: number,
): { ms: number; hasOffset: boolean } {
  const m = ISO_DATE_TIME.exec(text);
  const fail = (reason: string, at = 0): never => {
    throw new TimerSyntaxError(spec, offset + at, 'date-time', reason);
  };
  if (!m) return fail('expected an ISO-8601 date-time such as 2026-01-01T00:30:00Z');
  const [, y, mo, d, h, mi, s = '0', frac = '', zone] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  const ms = Math.floor(Number(`0.${frac || '0'}`) * 1000);
  if (month < 1 || month > 12) fail('month out of range', 5);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysInMonth) fail('day out of range', 8);
  if (hour > 23) fail('hour out of range', 11);
  if (minute > 59) fail('minute out of range', 14);
  if (second > 59) fail('second out of range', 17);
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, second, ms);
  const wallMs = wall.getTime();
  if (zone !== undefined) {
    if (zone.toUpperCase() === 'Z') return { ms: wallMs, hasOffset: true };
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) fail('offset out of range', text.length - zone.length);
    const sign = zone[0] === '-' ? -1 : 1;
    return { ms: wallMs - sign * (oh * 60 + om) * 60_000, hasOffset: true };
  }
  if (timezone === undefined || timezone === 'UTC') return { ms: wallMs, hasOffset: false };
  const clock = new WallClock(timezone);
  const wallSec = Math.floor(wallMs / 1000);
  clock.localtime(wallSec - 2 * 86400); // prefer the first of two equal wall times
  const t = clock.mktime({ year, mon: month - 1, mday: day, hour, min: minute, sec: second, isdst: -1 }).t;
  return { ms: t * 1000 + ms, hasOffset: false };
}
