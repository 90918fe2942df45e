/**
 * The periodic task record as Redis holds it (`p:t:<id>`, see docs/architecture.md): the hash
 * fields a definition is written as, the stored form of its schedule (the `timer` field), and the
 * decoding of a task hash. Its API types and rules are in src/periodic/definition.ts.
 */
import { UndecodableTaskError } from '../errors.js';
import { unpackValue } from './job-codec.js';

/** A task's schedule as its `timer` field stores it: its timers, and the parts beyond them. */
export interface ScheduleSpec {
  timers: string[];
  exclude?: string[];
  startAt?: number;
  endAt?: number;
  jitter?: number;
  limit?: number;
}

/** Whether a stored `timer` field holds a whole schedule (JSON) rather than one timer spec. */
export function isScheduleJson(stored: string): boolean {
  return stored.startsWith('{');
}

/** The stored `timer` field for a schedule: the one timer as it is when nothing else is set. */
export function encodeSchedule(s: ScheduleSpec): string {
  const extra = s.exclude?.length || s.startAt !== undefined || s.endAt !== undefined || s.jitter || s.limit !== undefined;
  if (s.timers.length === 1 && !extra) return s.timers[0];
  const out: ScheduleSpec = { timers: s.timers };
  if (s.exclude?.length) out.exclude = s.exclude;
  if (s.startAt !== undefined) out.startAt = s.startAt;
  if (s.endAt !== undefined) out.endAt = s.endAt;
  if (s.jitter) out.jitter = s.jitter;
  if (s.limit !== undefined) out.limit = s.limit;
  return JSON.stringify(out);
}

/**
 * Reads a stored `timer` field back into a schedule.
 * @throws {UndecodableTaskError} when the field holds JSON that is not a schedule.
 */
export function decodeSchedule(stored: string): ScheduleSpec {
  if (!isScheduleJson(stored)) return { timers: [stored] };
  const s = JSON.parse(stored) as ScheduleSpec;
  if (!Array.isArray(s.timers) || s.timers.some((t) => typeof t !== 'string')) {
    throw new UndecodableTaskError('its stored schedule lists no timers');
  }
  return s;
}

/** What a task's definition is written as, every default already filled in (src/periodic/definition.ts). */
export interface TaskRecord {
  id: string;
  task: string;
  /** The `timer` field: the one spec, or the whole schedule ({@link encodeSchedule}). */
  timer: string;
  immediately: boolean;
  timezone?: string;
  /** The timer's kind (`calendar`, `cron`, `interval`, `once`, `union`). */
  kind: string;
  group: string;
  packedArgs: Buffer;
  priority: string;
  subject?: string;
  submitter: string;
  owner?: string;
  overlap: string;
  catchup: string;
  catchupWindow: number;
  tolerance?: number;
  maxRuntime?: number;
  maxRetries: number;
  /** An interval timer's interval (ms). */
  intervalMs?: number;
  pauseOnFailure: boolean;
  /** False: the task is upserted disabled (which keeps the note of a pause). */
  enabled: boolean;
}

/** The hash fields of a task's definition (without nextrun and the run-time fields). */
export function definitionFields(r: TaskRecord, now: number): Array<string | Buffer | number> {
  return [
    'id',
    r.id,
    'task',
    r.task,
    'timer',
    r.timer,
    'immediately',
    r.immediately ? '1' : '',
    'timezone',
    r.timezone ?? '',
    'kind',
    r.kind,
    'group',
    r.group,
    'args',
    r.packedArgs,
    'priority',
    r.priority,
    'subject',
    r.subject ?? '',
    'submitter',
    r.submitter,
    'owner',
    r.owner ?? '',
    'overlap',
    r.overlap,
    'catchup',
    r.catchup,
    'catchupWindow',
    r.catchupWindow,
    'tolerance',
    r.tolerance ?? '',
    'maxRuntime',
    r.maxRuntime ?? '',
    'maxRetries',
    r.maxRetries,
    'interval',
    r.intervalMs ?? '',
    'updated',
    now,
    'pauseOnFailure',
    r.pauseOnFailure ? '1' : '',
    // (an upsert that enables the task clears the note of a pause, as enable does)
    ...(r.enabled ? ['note', ''] : []),
  ];
}

const NUMBERS = new Set([
  'catchupWindow',
  'tolerance',
  'maxRuntime',
  'maxRetries',
  'nextrun',
  'lastrun',
  'created',
  'updated',
  'runs',
]);
const FLAGS = new Set(['enabled', 'immediately', 'pauseOnFailure']);
const HIDDEN = new Set(['interval', 'period', 'staged']);

/**
 * A task's fields from an HGETALL reply (flat list of Buffers): numbers and flags decoded, empty
 * fields left out, the args unpacked, the schedule spread into `timer` and its controls. What
 * src/periodic/definition.ts names `PeriodicTask`.
 */
export function decodeTask(flat: Buffer[]): Record<string, unknown> {
  const t: Record<string, unknown> = {};
  for (let i = 0; i < flat.length; i += 2) {
    const field = flat[i].toString();
    const raw = flat[i + 1];
    if (field === 'args') {
      t.args = raw.length ? unpackValue(raw) : undefined;
      continue;
    }
    if (HIDDEN.has(field)) continue;
    const v = raw.toString();
    if (v === '') continue;
    if (field === 'timer') Object.assign(t, scheduleFields(v));
    else if (FLAGS.has(field)) t[field] = v === '1';
    else if (NUMBERS.has(field)) t[field] = Number(v);
    else t[field] = v;
  }
  return t;
}

/** A task's schedule fields from its stored `timer` field. */
function scheduleFields(stored: string): Record<string, unknown> {
  if (!isScheduleJson(stored)) return { timer: stored };
  const { timers, ...rest } = decodeSchedule(stored);
  return { timer: timers.length === 1 ? timers[0] : timers, ...rest };
}
