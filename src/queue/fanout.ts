import { FanOutLimitError, ValidationError } from '../errors.js';
import { type FlowRecord, packFlow, packSubmits, type QueueStore, type SubmitJob } from '../redis/queue-store.js';
import type { FailurePolicy, Job, Priority } from './job.js';
import { checkSpec, packValue } from './validate.js';

/** The end of a fan-out continuation's id: `<parent id>/after`. */
export const CONTINUATION_SUFFIX = '/after';

/** Most items one fanOut call takes. */
export const MAX_FAN_OUT = 100_000;

/** Most jobs, and bytes of packed args, of one staged chunk (what one fanout.lua call submits). */
const CHUNK = { jobs: 1000, bytes: 1 << 20 };

/** What the children of a fan-out are. */
export interface FanOutOptions {
  /** Name of the handler that runs each child (one item each, as its args). */
  task: string;
  /** The children's group; default the parent's. Children are taken round-robin by group like any job. */
  group?: string;
  /** Default the parent's. */
  priority?: Priority;
  /** Failed attempts retried before a child fails; default 3. */
  maxRetries?: number;
  /** Run time limit of each child (ms). */
  maxRuntime?: number;
  /**
   * The continuation (fan-in): a job with id `<this job's id>/after`, written with the children in
   * state `waiting-children` and released by the call that records the last child's end. It reads
   * the children's counts and results with `ctx.children()`. Its group and priority default to
   * this job's.
   */
  after?: ContinuationSpec;
  /** What a child's failure (for good) does to the continuation; default `fail` (it fails at once). */
  onFailure?: FailurePolicy;
}

/** The continuation of a fan-out ({@link FanOutOptions.after}). */
export interface ContinuationSpec {
  task: string;
  args?: unknown;
  group?: string;
  priority?: Priority;
  maxRetries?: number;
  maxRuntime?: number;
  subject?: string;
}

/** Children checked and packed, ready to stage. */
export interface PackedChildren {
  total: number;
  /** submit.lua job lists (see packSubmits; in the flow format with a continuation or a failure policy), at most {@link CHUNK} each. */
  chunks: Buffer[];
  /** The continuation (`after`), packed in the flow format. */
  continuation?: Buffer;
}

const OPTION_FIELDS = new Set(['task', 'group', 'priority', 'maxRetries', 'maxRuntime', 'after', 'onFailure']);
const POLICIES = new Set(['fail', 'ignore', 'remove', 'continue']);
const AFTER_FIELDS = new Set(['task', 'args', 'group', 'priority', 'maxRetries', 'maxRuntime', 'subject']);

/**
 * Checks a fan-out and packs its children, writing nothing. Between chunks it lets the event loop
 * run (100,000 children take the executor about a second), so that the executor's other work
 * (heartbeats, other runs) goes on meanwhile. `trace`: the traceparent of the parent's run span,
 * when it is traced; each child stores it, so that the child's run span links to it.
 * @throws {FanOutLimitError} past {@link MAX_FAN_OUT} items.
 * @throws {ValidationError} naming the bad option or item (`items[3]`).
 */
export async function packChildren(
  parent: Job,
  items: unknown,
  opts: FanOutOptions,
  maxArgsBytes: number,
  trace?: string,
): Promise<PackedChildren> {
  if (!Array.isArray(items)) throw new ValidationError('items', 'must be an array');
  if (items.length > MAX_FAN_OUT) throw new FanOutLimitError(items.length, MAX_FAN_OUT);
  if (typeof opts !== 'object' || opts === null) throw new ValidationError('options', 'must be an object with a task');
  for (const k of Object.keys(opts)) {
    if (!OPTION_FIELDS.has(k))
      throw new ValidationError(`options.${k}`, `is not a fanOut option (${[...OPTION_FIELDS].join(', ')})`);
  }
  const spec = checkSpec(
    {
      task: opts.task,
      group: opts.group ?? parent.group,
      priority: opts.priority ?? parent.priority,
      maxRetries: opts.maxRetries,
      maxRuntime: opts.maxRuntime,
    },
    maxArgsBytes,
    'options',
  );
  if (opts.onFailure !== undefined && !POLICIES.has(opts.onFailure)) {
    throw new ValidationError('options.onFailure', `must be one of ${[...POLICIES].join(', ')}`);
  }
  let continuation: Buffer | undefined;
  if (opts.after !== undefined) {
    const t = opts.after;
    if (typeof t !== 'object' || t === null) throw new ValidationError('options.after', 'must be an object with a task');
    for (const k of Object.keys(t)) {
      if (!AFTER_FIELDS.has(k))
        throw new ValidationError(`options.after.${k}`, `is not an option of after (${[...AFTER_FIELDS].join(', ')})`);
    }
    const c = checkSpec(
      { ...t, group: t.group ?? parent.group, priority: t.priority ?? parent.priority },
      maxArgsBytes,
      'options.after',
    );
    continuation = packFlow([{ ...c, id: `${parent.id}${CONTINUATION_SUFFIX}`, trace }], false);
  }
  // (children with a policy other than the default carry it: the flow format)
  const flow = opts.onFailure !== undefined && opts.onFailure !== 'fail';
  const packChunk = (jobs: SubmitJob[]) =>
    flow
      ? packFlow(
          jobs.map((j): FlowRecord => ({ ...j, id: j.id!, policy: opts.onFailure })),
          true,
        )
      : packSubmits(jobs, Infinity).packed;
  const chunks: Buffer[] = [];
  let chunk: SubmitJob[] = [];
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    const child: SubmitJob = {
      id: `${parent.id}/${i}`,
      task: spec.task,
      group: spec.group,
      priority: spec.priority,
      maxRetries: spec.maxRetries,
      maxRuntime: spec.maxRuntime,
      parent: parent.id,
      packedArgs: packValue(items[i], maxArgsBytes, `items[${i}]`),
      trace,
    };
    if (chunk.length === CHUNK.jobs || (chunk.length > 0 && bytes + child.packedArgs.length > CHUNK.bytes)) {
      chunks.push(packChunk(chunk));
      chunk = [];
      bytes = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
    chunk.push(child);
    bytes += child.packedArgs.length;
  }
  if (chunk.length > 0) chunks.push(packChunk(chunk));
  return { total: items.length, chunks, continuation };
}

/**
 * Submits committed children chunk by chunk (one fanout.lua call each, so no call holds Redis for
 * long): all those of `parent`, or with no parent those of any parent (the one waiting longest
 * first), at most `maxCalls` calls. Any number of executors may do it at once: each chunk is
 * submitted by one call, and a child whose id exists is not added again.
 */
export async function submitCommitted(store: QueueStore, parent?: string, maxCalls = 200): Promise<void> {
  for (let i = 0; parent !== undefined || i < maxCalls; i++) {
    const r = await store.fanout(parent);
    if (r.parent === null || (parent !== undefined && r.left === 0)) return;
  }
}
