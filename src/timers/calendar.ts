/** Calendar-event timers (systemd.time(7)). */
import { nextElapseMicros } from './calendar-next.js';
import { type CalendarSpec, formatCalendarSpec, parseCalendarSpec } from './calendar-spec.js';
import type { Timer } from './types.js';

/** A calendar-event timer; also exposes microsecond-precise elapses. */
export interface CalendarTimer extends Timer {
  readonly kind: 'calendar';
  /**
   * The first elapse strictly after `afterUs` (microseconds since the epoch),
   * in microseconds, or null. This is systemd's own precision.
   */
  nextMicros(afterUs: number): number | null;
}

/**
 * Parses a systemd calendar event. Without a zone in the spec, wall-clock
 * fields are read in `timezone` (default UTC), like systemd reads them in $TZ.
 */
export function parseCalendar(spec: string, timezone?: string): CalendarTimer {
  const parsed: CalendarSpec = parseCalendarSpec(spec);
  const zone = parsed.utc ? null : (parsed.timezone ?? (timezone === undefined || timezone === 'UTC' ? null : timezone));
  const effectiveZone = parsed.utc ? 'UTC' : (parsed.timezone ?? timezone);
  const nextMicros = (afterUs: number): number | null => nextElapseMicros(parsed, zone, afterUs);
  return {
    kind: 'calendar',
    spec,
    normalized: formatCalendarSpec(parsed),
    timezone: effectiveZone,
    nextMicros,
    next(after: Date): Date | null {
      const ms = after.getTime();
      if (!Number.isFinite(ms)) return null;
      const us = nextMicros(ms * 1000);
      return us === null ? null : new Date(Math.ceil(us / 1000));
    },
  };
}
