/**
 * Timers: systemd calendar events, cron rules, fixed intervals and one-shot
 * due dates, behind one function, {@link parseTimer}.
 */

export { TimerSyntaxError } from '../errors.js';
export type { CalendarTimer } from './calendar.js';
export { type Exclusions, parseExclusions } from './exclusions.js';
export { detectTimerKind, parseTimer } from './parse.js';
export type { ParseTimerOptions, Timer, TimerKind } from './types.js';
