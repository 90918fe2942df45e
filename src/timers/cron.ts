/**
 * Cron rules (5 fields, or 6 with seconds first) and macros (`@daily`,
 * `@hourly`…), evaluated by cron-parser in an IANA time zone.
 *
 * Across DST changes (cron-parser's behaviour, relied on and tested): a wall
 * time skipped by a spring-forward gap runs once, shifted forward by the gap
 * (02:30 → 03:30); a wall time that occurs twice in a fall-back overlap runs
 * once, at its first occurrence; `*` and stepped fields follow real elapsed
 * time through both.
 */
import { type CronExpression, CronExpressionParser } from 'cron-parser';
import { TimerSyntaxError } from './errors.js';
import type { Timer } from './types.js';

const FIELD_NAMES_5 = ['minute', 'hour', 'day of month', 'month', 'day of week'];
const FIELD_NAMES_6 = ['second', ...FIELD_NAMES_5];
const MACROS = [
  '@yearly',
  '@annually',
  '@monthly',
  '@weekly',
  '@daily',
  '@hourly',
  '@minutely',
  '@secondly',
  '@weekdays',
  '@weekends',
];

/** Whether `spec` is written as a cron rule: a macro, or 5 or more fields. */
export function looksLikeCron(spec: string): boolean {
  const s = spec.trim();
  return /^@[a-z]/i.test(s) || s.split(/\s+/).length >= 5;
}

function tryParse(expr: string, tz: string): CronExpression | Error {
  try {
    return CronExpressionParser.parse(expr, { tz, currentDate: new Date(0) });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Finds which field makes cron-parser fail, by replacing one field at a time with `*`. */
function locate(spec: string, fields: string[], tz: string): { part: string; pos: number } {
  const names = fields.length === 6 ? FIELD_NAMES_6 : FIELD_NAMES_5;
  const positions: number[] = [];
  const re = /\S+/g;
  for (let m = re.exec(spec); m; m = re.exec(spec)) positions.push(m.index);
  for (let i = 0; i < fields.length; i++) {
    const probe = fields.map((f, j) => (j === i ? '*' : f)).join(' ');
    if (!(tryParse(probe, tz) instanceof Error)) return { part: `cron ${names[i]} field`, pos: positions[i] ?? 0 };
  }
  return { part: 'cron rule', pos: positions[0] ?? 0 };
}

/** Parses a cron rule or macro; wall times are read in `timezone` (default UTC). */
export function parseCron(spec: string, timezone?: string): Timer {
  const tz = timezone ?? 'UTC';
  const s = spec.trim();
  const lead = spec.length - spec.trimStart().length;
  const fields = s.split(/\s+/);
  if (s.startsWith('@')) {
    if (!MACROS.includes(s.toLowerCase()))
      throw new TimerSyntaxError(spec, lead, 'cron macro', `unknown macro (use one of ${MACROS.join(', ')})`);
  } else if (fields.length !== 5 && fields.length !== 6) {
    throw new TimerSyntaxError(spec, lead, 'cron rule', `expected 5 or 6 fields, got ${fields.length}`);
  }
  const text = s.startsWith('@') ? s.toLowerCase() : fields.join(' ');
  const parsed = tryParse(text, tz);
  if (parsed instanceof Error) {
    const { part, pos } = s.startsWith('@') ? { part: 'cron macro', pos: lead } : locate(spec, fields, tz);
    throw new TimerSyntaxError(spec, pos, part, parsed.message);
  }
  const expr = parsed;
  const six = expr.stringify(true);
  const normalized = fields.length === 6 || !six.startsWith('0 ') ? six : expr.stringify(false);
  return {
    kind: 'cron',
    spec,
    normalized,
    timezone,
    next(after: Date): Date | null {
      if (Number.isNaN(after.getTime())) return null;
      try {
        expr.reset(after);
        return expr.next().toDate();
      } catch {
        return null; // cron-parser bounds its own search and gives up with an error
      }
    },
  };
}
