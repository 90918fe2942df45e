/**
 * Fixed intervals: `every 30s`, `every 2h30m`, `every 1h from 2026-01-01T00:30:00Z`,
 * ISO-8601 durations (`PT15M`, `P1D`) and repeating intervals
 * (`R/2026-01-01T00:30:00Z/PT1H`, `R5/2026-01-01T00:30:00Z/PT1H`).
 *
 * Occurrences are anchor + k × interval for k = 0, 1, 2…; without an explicit
 * anchor the anchor is the Unix epoch, so every replica computes the same grid.
 */

import { TimerSyntaxError } from '../errors.js';
import { formatDuration, formatIsoDuration, looksLikeIsoDuration, parseHumanDuration, parseIsoDuration } from './duration.js';
import { parseIsoInstant } from './instant.js';
import type { Timer } from './types.js';

const MAX_DATE_MS = 8.64e15;

/** Whether `spec` is written in one of the interval forms. */
export function looksLikeInterval(spec: string): boolean {
  const s = spec.trim();
  return /^every(\s|$)/i.test(s) || /^R\d*\//.test(s) || looksLikeIsoDuration(s);
}

function makeInterval(
  spec: string,
  intervalMs: number,
  anchorMs: number,
  count: number | undefined,
  timezone: string | undefined,
): Timer {
  let normalized: string;
  if (count !== undefined) normalized = `R${count}/${new Date(anchorMs).toISOString()}/${formatIsoDuration(intervalMs)}`;
  else if (anchorMs === 0) normalized = `every ${formatDuration(intervalMs)}`;
  else normalized = `every ${formatDuration(intervalMs)} from ${new Date(anchorMs).toISOString()}`;
  return {
    kind: 'interval',
    spec,
    normalized,
    timezone,
    intervalMs,
    next(after: Date): Date | null {
      const a = after.getTime();
      if (Number.isNaN(a)) return null;
      const k = a < anchorMs ? 0 : Math.floor((a - anchorMs) / intervalMs) + 1;
      if (count !== undefined && k >= count) return null;
      const next = anchorMs + k * intervalMs;
      return next <= MAX_DATE_MS ? new Date(next) : null;
    },
  };
}

/** Parses an interval spec (see the module comment). */
export function parseInterval(spec: string, timezone?: string): Timer {
  const lead = spec.length - spec.trimStart().length;
  const s = spec.trim();
  const repeating = /^R(\d*)\/([^/]*)\/([^/]*)$/.exec(s);
  if (repeating) {
    const [, n, start, dur] = repeating;
    const count = n === '' ? undefined : Number(n);
    if (count !== undefined && !(count >= 1 && count <= 1e9))
      throw new TimerSyntaxError(spec, lead + 1, 'repetitions', 'must be between 1 and 1000000000');
    const startPos = lead + 2 + n!.length;
    const anchor = parseIsoInstant(start!, timezone, spec, startPos);
    const intervalMs = parseIsoDuration(dur!, spec, startPos + start!.length + 1);
    return makeInterval(spec, intervalMs, anchor.ms, count, anchor.hasOffset ? undefined : timezone);
  }
  if (/^R/.test(s))
    throw new TimerSyntaxError(
      spec,
      lead,
      'repeating interval',
      'expected R[n]/<start>/<duration>, e.g. R/2026-01-01T00:30:00Z/PT1H',
    );
  if (looksLikeIsoDuration(s)) return makeInterval(spec, parseIsoDuration(s, spec, lead), 0, undefined, undefined);
  const every = /^every(\s+)/i.exec(s);
  if (!every) throw new TimerSyntaxError(spec, lead, 'interval', 'expected "every <duration>"');
  const bodyPos = lead + every[0].length;
  const body = s.slice(every[0].length);
  const from = /\s+from\s+/i.exec(body);
  const durText = from ? body.slice(0, from.index) : body;
  const intervalMs = looksLikeIsoDuration(durText)
    ? parseIsoDuration(durText, spec, bodyPos)
    : parseHumanDuration(durText, spec, bodyPos);
  if (!from) return makeInterval(spec, intervalMs, 0, undefined, undefined);
  const anchorPos = bodyPos + from.index + from[0].length;
  const anchor = parseIsoInstant(body.slice(from.index + from[0].length), timezone, spec, anchorPos);
  return makeInterval(spec, intervalMs, anchor.ms, undefined, anchor.hasOffset ? undefined : timezone);
}
