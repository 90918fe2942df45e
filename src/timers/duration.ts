/** Fixed-length durations: `2h30m`, `30 seconds`, ISO-8601 `PT15M`, `P1DT12H`, `P2W`. */
import { TimerSyntaxError } from '../errors.js';

const UNIT_MS: Record<string, number> = {
  ms: 1,
  msec: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
  weeks: 604_800_000,
};

/** Largest duration accepted (about 100 years), so arithmetic stays exact. */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000;

const ISO_DURATION =
  /^P(?:(\d+(?:[.,]\d+)?)W|(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?)$/i;

function check(ms: number, spec: string, pos: number): number {
  if (!Number.isFinite(ms) || ms < 1) throw new TimerSyntaxError(spec, pos, 'duration', 'must be at least 1ms');
  if (ms > MAX_DURATION_MS) throw new TimerSyntaxError(spec, pos, 'duration', 'too long (at most 100 years)');
  if (!Number.isInteger(ms)) throw new TimerSyntaxError(spec, pos, 'duration', 'must be a whole number of milliseconds');
  return ms;
}

/** Whether `text` starts like an ISO-8601 duration. */
export function looksLikeIsoDuration(text: string): boolean {
  return /^P(\d|T\d)/i.test(text);
}

/**
 * Parses an ISO-8601 duration with fixed-length units only (weeks, days =
 * 24 h, hours, minutes, seconds); years and months are refused because their
 * length varies. `pos` is where `text` starts in `spec`.
 */
export function parseIsoDuration(text: string, spec: string, pos: number): number {
  const m = ISO_DURATION.exec(text);
  if (!m || /T$/i.test(text))
    throw new TimerSyntaxError(spec, pos, 'duration', 'expected an ISO-8601 duration such as PT15M or P1D');
  const [, w, y, mo, d, h, mi, s] = m;
  if (y !== undefined || mo !== undefined) {
    throw new TimerSyntaxError(spec, pos, 'duration', 'years and months have no fixed length; use days or a calendar event');
  }
  const num = (v: string | undefined): number => (v === undefined ? 0 : Number(v.replace(',', '.')));
  const ms = num(w) * 604_800_000 + num(d) * 86_400_000 + num(h) * 3_600_000 + num(mi) * 60_000 + num(s) * 1000;
  return check(Math.round(ms * 1000) / 1000, spec, pos);
}

/** Parses `2h30m`, `2h 30m`, `90s`, `1.5h`, `30 seconds`… `pos` is where `text` starts in `spec`. */
export function parseHumanDuration(text: string, spec: string, pos: number): number {
  const re = /\s*(\d+(?:\.\d+)?)\s*([a-z]+)/giy;
  let total = 0;
  let at = 0;
  let parts = 0;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) throw new TimerSyntaxError(spec, pos + at, 'duration', 'expected a number and a unit such as 30s, 15m, 2h, 1d');
    const unit = UNIT_MS[m[2]!.toLowerCase()];
    if (unit === undefined) {
      throw new TimerSyntaxError(
        spec,
        pos + at + m[0].indexOf(m[2]!),
        'duration',
        `unknown unit ${JSON.stringify(m[2])} (use ms, s, m, h, d, w)`,
      );
    }
    total += Number(m[1]) * unit;
    at = re.lastIndex;
    parts++;
  }
  if (parts === 0) throw new TimerSyntaxError(spec, pos, 'duration', 'missing duration');
  return check(Math.round(total * 1000) / 1000, spec, pos);
}

/** Canonical short text of a duration: `2h30m`, `1d`, `1m30s`, `250ms`. */
export function formatDuration(ms: number): string {
  const units: Array<[string, number]> = [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
    ['ms', 1],
  ];
  let rest = ms;
  let out = '';
  for (const [name, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${name}`;
      rest -= n * size;
    }
  }
  return out || '0ms';
}

/** ISO-8601 text of a duration: `PT1H30M`, `P1DT0.5S`. */
export function formatIsoDuration(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  let time = '';
  if (h) time += `${h}H`;
  if (m) time += `${m}M`;
  if (s) time += `${s}S`;
  return `P${days ? `${days}D` : ''}${time ? `T${time}` : ''}`;
}
