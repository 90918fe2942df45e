/** One-shot due dates (an ISO-8601 date-time). */
import { parseIsoInstant } from './instant.js';
import type { Timer } from './types.js';

/**
 * Parses a one-shot due date. Without an offset in the text the wall time is
 * read in `timezone` (default UTC). It elapses once; `next` is null after it.
 */
export function parseOnce(spec: string, timezone?: string): Timer {
  const { ms, hasOffset } = parseIsoInstant(spec.trim(), timezone, spec, spec.length - spec.trimStart().length);
  const due = new Date(ms);
  return {
    kind: 'once',
    spec,
    normalized: due.toISOString(),
    timezone: hasOffset ? undefined : timezone,
    next(after: Date): Date | null {
      return after.getTime() < ms ? new Date(ms) : null;
    },
  };
}
