/**
 * Timers: systemd calendar events, cron rules, fixed intervals and one-shot
 * due dates, behind one function, {@link parseTimer}.
 */
export { parseTimer, detectTimerKind } from './parse.js';
export { TimerSyntaxError } from './errors.js';
export type { Timer, TimerKind, ParseTimerOptions } from './types.js';
export type { CalendarTimer } from './calendar.js';
