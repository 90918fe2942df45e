/** The four kinds of timer Rota understands. */
export type TimerKind = 'calendar' | 'cron' | 'interval' | 'once';

/** Options for {@link parseTimer}. */
export interface ParseTimerOptions {
  /**
   * IANA time zone (e.g. `Europe/Paris`) in which wall-clock specs are read
   * when the spec itself names no zone. Defaults to UTC.
   */
  timezone?: string;
}

/** A parsed timer: a rule that yields elapse instants. */
export interface Timer {
  /** Which grammar the spec was parsed with. */
  readonly kind: TimerKind;
  /** The spec as given. */
  readonly spec: string;
  /**
   * Canonical text. Parsing it again with the same options yields the same
   * elapses. For calendar events it is exactly systemd's "Normalized form".
   */
  readonly normalized: string;
  /**
   * The time zone the timer's wall-clock fields are read in: the zone named in
   * the spec, else the `timezone` option; `undefined` means UTC (or, for
   * intervals and absolute due dates, that no zone applies).
   */
  readonly timezone: string | undefined;
  /** For interval timers: the period in milliseconds. */
  readonly intervalMs?: number;
  /**
   * The first elapse strictly after `after`, or `null` when there is none.
   * Sub-millisecond elapses are rounded up to the next millisecond.
   */
  next(after: Date): Date | null;
}
