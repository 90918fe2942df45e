/** parseTimer: decides a spec's kind and hands it to the right parser. */

import { TimerSyntaxError } from '../errors.js';
import { parseCalendar } from './calendar.js';
import { looksLikeCron, parseCron } from './cron.js';
import { looksLikeIsoDateTime } from './instant.js';
import { looksLikeInterval, parseInterval } from './interval.js';
import { parseOnce } from './once.js';
import type { ParseTimerOptions, Timer, TimerKind } from './types.js';
import { isValidTimeZone } from './zone.js';

/**
 * Which grammar a spec is read with, decided from its shape alone:
 * `every …`, `R…/…/…` or an ISO duration (`P…`) → interval; `@name` → cron
 * macro (but `@<digits>` is a systemd timestamp → calendar); an ISO date-time
 * with `T` → once; five or six whitespace-separated fields → cron; anything
 * else → calendar.
 */
export function detectTimerKind(spec: string): TimerKind {
  const s = spec.trim();
  if (looksLikeInterval(s)) return 'interval';
  if (/^@\s*\+?\d/.test(s)) return 'calendar';
  if (looksLikeIsoDateTime(s)) return 'once';
  if (looksLikeCron(s)) return 'cron';
  return 'calendar';
}

/**
 * Parses a timer spec: a systemd calendar event, a cron rule, an interval or
 * a one-shot due date (see {@link detectTimerKind}).
 *
 * @throws TimerSyntaxError naming the offending part and its position.
 */
export function parseTimer(spec: string, options: ParseTimerOptions = {}): Timer {
  if (typeof spec !== 'string') throw new TimerSyntaxError(String(spec), 0, 'spec', 'must be a string');
  const { timezone } = options;
  if (timezone !== undefined && timezone !== 'UTC' && !isValidTimeZone(timezone)) {
    throw new TimerSyntaxError(spec, 0, 'timezone option', `unknown time zone ${JSON.stringify(timezone)}`);
  }
  switch (detectTimerKind(spec)) {
    case 'interval':
      return parseInterval(spec, timezone);
    case 'once':
      return parseOnce(spec, timezone);
    case 'cron':
      return parseCron(spec, timezone);
    default:
      return parseCalendar(spec, timezone);
  }
}
