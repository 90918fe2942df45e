/**
 * Timers: systemd calendar events, cron rules, fixed intervals and one-shot
 * due dates, behind one function, {@link parseTimer}.
 */

export type { CalendarTimer } from './calendar.js';
export { TimerSyntaxError } from './errors.js';
export { type Exclusions, parseExclusions } from './exclusions.js';
export { detectTimerKind, parseTimer } from './parse.js';
export type { ParseTimerOptions, Timer, TimerKind } from './types.js';
