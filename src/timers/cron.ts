/**
 * Cron rules (5 fields, or 6 with seconds first) and macros (`@daily`,
 * `@hourly`…). cron-parser parses them and lists the matching wall-clock
 * times (read as UTC, where no clock changes); this module places those wall
 * times in the IANA zone itself, since cron-parser's own zone handling stops
 * or repeats at some DST changes (30-minute ones, those at midnight).
 *
 * Across DST changes (the classic Vixie cron rule): a rule that runs every hour
 * (hour field `*`) follows the clock, so wall times skipped by a gap do not
 * run and those repeated by an overlap run again. Any other rule runs a wall
 * time skipped by a gap once, shifted forward by the gap (02:30 → 03:30), and
 * a wall time that occurs twice once, at its first occurrence.
 */
import { type CronExpression, CronExpressionParser } from 'cron-parser';
import { TimerSyntaxError } from '../errors.js';
import type { Timer } from './types.js';
import { offsetLookup } from './zone.js';

/** Longer than any change of a zone's UTC offset (Troll's is 2 hours). */
const SPAN_MS = 3 * 3_600_000;
/** Most wall times looked at for one `next` (a bound, never reached by a valid rule). */
const MAX_WALLS = 100_000;

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
  const six = parsed.stringify(true);
  const normalized = fields.length === 6 || !six.startsWith('0 ') ? six : parsed.stringify(false);
  // The same rule over wall-clock times (UTC has no DST changes).
  const walls = tz === 'UTC' ? parsed : (tryParse(text, 'UTC') as CronExpression);
  const next =
    tz === 'UTC'
      ? (a: number) => wallAfter(walls, a)
      : zonedNext(walls, offsetLookup(tz), walls.fields.hour.values.length === 24);
  return {
    kind: 'cron',
    spec,
    normalized,
    timezone,
    next(after: Date): Date | null {
      const a = after.getTime();
      if (Number.isNaN(a)) return null;
      const t = next(a);
      return t === null ? null : new Date(t);
    },
  };
}

/** The first wall time the rule matches after `w` (ms, wall clock read as UTC), or null. */
function wallAfter(expr: CronExpression, w: number): number | null {
  try {
    expr.reset(new Date(w));
    return expr.next().getTime();
  } catch {
    return null; // cron-parser bounds its own search and gives up with an error
  }
}

/**
 * `next` for a rule in a zone with `offsetOf` (seconds east at an instant in seconds). `everyHour`:
 * the rule follows the clock through DST changes (see the module comment).
 */
function zonedNext(walls: CronExpression, offsetOf: (sec: number) => number, everyHour: boolean): (a: number) => number | null {
  const off = (ms: number): number => offsetOf(Math.floor(ms / 1000)) * 1000;
  /** The instants (ms, ascending) at which wall time `w` runs. */
  const instants = (w: number): number[] => {
    const before = off(w - 86_400_000);
    const after = off(w + 86_400_000);
    const fits = (o: number): boolean => off(w - o) === o;
    const found = [before, ...(after === before ? [] : [after])].filter(fits).map((o) => w - o);
    if (found.length === 0 && fits(off(w))) found.push(w - off(w));
    if (found.length === 0) return everyHour ? [] : [w - before]; // in a gap: shifted forward by it
    found.sort((x, y) => x - y);
    return everyHour ? found : found.slice(0, 1);
  };
  /** The earliest instant after `a` of the wall times from `from` on; stops once no later wall can run earlier. */
  const earliest = (a: number, from: number, until: number): number | null => {
    let best: number | null = null;
    let w: number | null = from - 1;
    for (let i = 0; i < MAX_WALLS; i++) {
      w = wallAfter(walls, w);
      if (w === null || w >= until) break;
      for (const t of instants(w)) if (t > a && (best === null || t < best)) best = t;
      // A wall time runs no earlier than itself minus the largest offset in play.
      if (best !== null && w >= best + Math.max(off(a), off(best), off(best - SPAN_MS))) break;
    }
    return best;
  };
  return (a: number): number | null => {
    const own = a + off(a);
    const forward = earliest(a, Math.floor(own / 1000) * 1000 - 1000, Number.POSITIVE_INFINITY);
    // An hourly rule also runs wall times below a's own the second time they occur, after a fall-back.
    const low = Math.min(off(a), off(a + SPAN_MS));
    if (!everyHour || low === off(a)) return forward;
    const again = earliest(a, a + low, own);
    return again !== null && (forward === null || again < forward) ? again : forward;
  };
}
