/**
 * Event rules (Toucan's "after event"): their shape and validation, how a rule is stored and read
 * back, and the task record of a rule's pending run for a subject.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import type { Priority } from '../queue/job.js';
import { DEFAULT_MAX_RETRIES, JOB_FIELDS, packValue } from '../queue/validate.js';
import { unpackValue } from '../redis/job-codec.js';
import type { Arg } from '../redis/library.js';
import { MAX_DELAY_MS } from '../redis/wire.js';
import { MAX_DURATION_MS } from '../timers/duration.js';
import { parseTimer, type Timer } from '../timers/index.js';
import { knownKeys, text, zodError } from '../util/check.js';
import { checkId, RULE_OWNER_PREFIX, RULE_RUN_PREFIX } from './definition.js';

/** An event rule (Toucan's "after event"): a run `delay` after each event, per subject. */
export interface EventRuleDefinition<A = unknown> {
  /** Unique id: 1–200 of `A-Z a-z 0-9 . _ : -`. */
  id: string;
  /** Event name it follows, e.g. `user.last_seen`. */
  after: string;
  /** ISO-8601 duration (`P7DT30S`), `every`-style duration text is not accepted; or ms. At most 100 years. */
  delay: string | number;
  /** Handler of the run. */
  task: string;
  group?: string;
  /** The jobs' args: what `SubmitSpec.args` takes (nested at most 100 levels deep). */
  args?: A;
  priority?: Priority;
  /** Retries of each run after failures (default 3, as a job's). */
  maxRetries?: number;
}

/** A stored event rule. */
export interface EventRule<A = unknown> extends EventRuleDefinition<A> {
  delayMs: number;
  created: number;
}

/** An event for {@link PeriodicTasks.emit}. */
export interface EmittedEvent {
  /** Event name, e.g. `user.last_seen`. */
  event: string;
  /** Who or what it is about, e.g. a user id; one pending run per rule and subject. */
  subject: string;
  /** When it happened (ms or Date, at most 9,999,999,999,999 ms: the year 2286); default now. */
  at?: number | Date;
}

const eventName = text(200);
const ruleSchema = z
  .object({
    id: z.string(),
    after: eventName,
    delay: z.union([
      z.string().min(1, 'must not be empty'),
      z.number().int().nonnegative().max(MAX_DURATION_MS, `must be at most ${MAX_DURATION_MS} ms (100 years)`),
    ]),
    task: JOB_FIELDS.task,
    group: JOB_FIELDS.group.optional(),
    args: JOB_FIELDS.args.optional(),
    priority: JOB_FIELDS.priority.optional(),
    maxRetries: JOB_FIELDS.maxRetries.optional(),
  })
  .strict();

const emitSchema = z
  .object({
    event: eventName,
    // (the subject of a pending run: the job field, not empty)
    subject: text(1000),
    at: z
      .union([z.number().int().nonnegative(), z.date().transform((d) => d.getTime())])
      .refine((t) => t >= 0 && t <= MAX_DELAY_MS, `must be a valid time at most ${MAX_DELAY_MS} ms (the year 2286)`)
      .optional(),
  })
  .strict();

/**
 * Checks a rule definition; answers its delay in ms and the record's fields other than `id` and
 * `after` (field, value pairs, as periodic-rule takes them).
 * @throws {ValidationError} naming the bad field.
 */
export function checkRule(def: EventRuleDefinition, maxArgsBytes: number): { delayMs: number; fields: Arg[] } {
  if (typeof def !== 'object' || def === null) throw new ValidationError('rule', 'must be an object');
  knownKeys(def, ruleSchema.shape);
  const parsed = ruleSchema.safeParse(def);
  if (!parsed.success) throw zodError('', parsed.error);
  checkId(def.id);
  const delayMs = typeof def.delay === 'number' ? def.delay : isoDelay(def.delay);
  const args = packValue(def.args, maxArgsBytes, 'args');
  return {
    delayMs,
    fields: [
      'delay',
      String(def.delay),
      'delayMs',
      delayMs,
      'task',
      def.task,
      'group',
      def.group ?? 'default',
      'args',
      args,
      'priority',
      def.priority ?? 'low',
      'maxRetries',
      def.maxRetries ?? DEFAULT_MAX_RETRIES,
    ],
  };
}

/** Checks an emitted event. @throws {ValidationError} naming the bad field. */
export function checkEvent(e: EmittedEvent): void {
  if (typeof e !== 'object' || e === null) throw new ValidationError('event', 'must be an object');
  knownKeys(e, emitSchema.shape);
  const parsed = emitSchema.safeParse(e);
  if (!parsed.success) throw zodError('', parsed.error);
}

/**
 * The task fields of rule `ruleId`'s pending run (task id `id`) for event `e`, due at `due` (ms),
 * written at `now`; `rule` is the rule's stored record.
 */
export function pendingRunFields(
  ruleId: string,
  rule: Record<string, Buffer>,
  id: string,
  e: { event: string; subject: string },
  due: number,
  now: number,
): Arg[] {
  const timer = new Date(due).toISOString();
  return [
    'id',
    id,
    'task',
    rule.task,
    'timer',
    timer,
    'timezone',
    '',
    'kind',
    'once',
    'group',
    rule.group,
    'args',
    rule.args,
    'priority',
    rule.priority,
    'subject',
    e.subject,
    'submitter',
    `rule:${ruleId}`,
    'owner',
    ruleOwner(ruleId),
    'overlap',
    'allow',
    'catchup',
    'latest',
    'catchupWindow',
    0,
    'tolerance',
    '',
    'maxRuntime',
    '',
    'maxRetries',
    rule.maxRetries,
    'interval',
    '',
    'rule',
    ruleId,
    'event',
    e.event,
    'updated',
    now,
  ];
}

/** An event rule from its stored record (field -> bytes), or null when there is none. */
export function decodeRule<A>(h: Record<string, Buffer>): EventRule<A> | null {
  if (!h.id) return null;
  const s = (k: string) => h[k]?.toString();
  const delay = s('delay')!;
  return {
    id: s('id')!,
    after: s('after')!,
    delay: /^\d+$/.test(delay) ? Number(delay) : delay,
    delayMs: Number(s('delayMs')),
    task: s('task')!,
    group: s('group'),
    args: (h.args?.length ? unpackValue(h.args) : undefined) as A,
    priority: s('priority') as Priority,
    maxRetries: Number(s('maxRetries')),
    created: Number(s('created')),
  };
}

/** The owner of rule `ruleId`'s pending runs. */
export function ruleOwner(ruleId: string): string {
  return `${RULE_OWNER_PREFIX}${ruleId}`;
}

/** Task id of a rule's pending run for a subject (subjects may hold any characters, so they are hashed). */
export function pendingId(ruleId: string, subject: string): string {
  return `${RULE_RUN_PREFIX}${ruleId}:${createHash('sha1').update(subject).digest('hex').slice(0, 20)}`;
}

function isoDelay(text: string): number {
  let t: Timer;
  try {
    t = parseTimer(text);
  } catch (err) {
    throw new ValidationError('delay', (err as Error).message);
  }
  if (t.kind !== 'interval' || !t.intervalMs || !/^P/i.test(text.trim())) {
    throw new ValidationError('delay', `must be an ISO-8601 duration such as P7DT30S, or milliseconds (got "${text}")`);
  }
  return t.intervalMs;
}
