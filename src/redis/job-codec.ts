/**
 * The job record as Redis holds it, and its wire format: the packed description (field `d` of a
 * job hash, written by submit and read by the scripts) and the decoding of a job hash. Shared by
 * the stores and the scripts' callers; the field orders come from ./wire.ts.
 */
import { pack, Unpackr, unpack, unpackMultiple } from 'msgpackr';
import { CHILD_FIELDS, DEDUP_UNTIL, DESCRIPTION, FAILURE_POLICY, FLOW_FIELDS } from './wire.js';

/**
 * Where a job is in its life. Final states: success, failed, cancelled. `delayed`: submitted with
 * a due time still to come; it becomes `waiting` then.
 */
export type JobState =
  | 'delayed'
  | 'waiting-children'
  | 'waiting'
  | 'scheduled'
  | 'running'
  | 'success'
  | 'stuck'
  | 'failed'
  | 'cancelled';

/**
 * What a child's failure does to the job that waits on it (a flow's parent, a fan-out's `after`),
 * named after BullMQ's options: `fail` it (failParentOnFailure, the default), `ignore` the failure
 * (ignoreDependencyOnFailure), `remove` the dependency (removeDependencyOnFailure: counted as
 * removed, not failed), `continue` it at once (continueParentOnFailure).
 */
export type FailurePolicy = 'fail' | 'ignore' | 'remove' | 'continue';

export type Priority = 'high' | 'low';

/** A job as stored in Redis. Times are milliseconds since the epoch (Redis server clock). */
export interface Job<A = unknown, R = unknown> {
  id: string;
  /** Name of the handler that runs it. */
  task: string;
  /** Tenant; fairness is round-robin across groups. */
  group: string;
  args: A;
  priority: Priority;
  subject: string;
  submitter: string;
  state: JobState;
  /** Failed attempts so far (each made the job stuck and retried). */
  retries: number;
  maxRetries: number;
  /** Id of the executor that took it last. */
  worker?: string;
  /** Host name and process id of the executor that ran it (runs of periodic tasks, for their history). */
  host?: string;
  pid?: number;
  submitted: number;
  /** When its current or last run started. */
  started?: number;
  finished?: number;
  /** When a stuck job may run again. */
  due?: number;
  /** When a job submitted with a delay or due time becomes waiting (server clock). */
  runAt?: number;
  /**
   * When the queue handed it out (server clock), kept for jobs of a group with a rate limit:
   * the time its start counts at in the group's rate.
   */
  taken?: number;
  /** The order in which the queue handed jobs out (also the lease token of the run). */
  takeSeq?: number;
  /** Run time limit in ms, after which its signal aborts. */
  maxRuntime?: number;
  /** Id of the periodic task that submitted it. */
  tracker?: string;
  /** Planned time of the periodic occurrence it runs. */
  occurrence?: number;
  progress?: number;
  result?: R;
  /** The last error (message and stack) of a failed or stuck run. */
  error?: string;
  /** Set when cancellation of a running job was requested. */
  cancelRequested?: boolean;
  /** For a fan-out child (ctx.fanOut): the id of the job that fanned it out. Its own id is `<parent>/<index>`. */
  parent?: string;
  /** For a job that fanned out (ctx.fanOut) or a flow's parent: its children by state. */
  children?: ChildCounts;
  /** The deduplication key it was submitted with (submit's `dedup.key`, scoped to its group). */
  dedupKey?: string;
  /** The id of the batch it belongs to (`Batch.submit`, docs/jobs.md#batches). */
  batch?: string;
  /** What its dedup key holds for: until it starts, until it ends, or for the whole TTL (`dedup.until`). */
  dedupUntil?: 'start' | 'end' | 'ttl';
  /** When its dedup key's TTL runs out (ms, server clock), when it has one. */
  dedupExpires?: number;
  /**
   * Set on the job a submit answers when the submit added no job because this one holds its dedup
   * key (`true`), or did so and replaced this pending job's args (`'replaced'`, dedup.replace).
   * Never stored: only a submit's answer has it.
   */
  deduplicated?: true | 'replaced';
  /** For a job that fanned out with a continuation (`after`): the continuation's id. */
  continuation?: string;
  /** For a child: what its failure does to the job waiting on it, when not `fail`. */
  onFailure?: FailurePolicy;
  /** For a job that failed because a child failed (policy `fail`): that child's id. */
  failedBy?: string;
  /**
   * Its runs, newest first: the current or last one, then the earlier ones (failures retried,
   * runs lost with their executor, failed or cancelled runs put back), the last 25 at most. Read
   * by `getJob` only (absent from job lists).
   */
  attempts?: Attempt[];
}

/** One run of a job. Times are milliseconds since the epoch (Redis server clock). */
export interface Attempt {
  /** When it started (absent when it is not known). */
  started?: number;
  /** When it ended (absent while it runs). */
  finished?: number;
  /** Id of the executor that ran it. */
  executor?: string;
  /** How it ended, or `running` for a run in progress. */
  outcome: 'running' | 'success' | 'failed' | 'cancelled';
  /** The error (message and stack) a failed run ended with. */
  error?: string;
}

/**
 * A fan-out parent's children by state. `waiting` counts every child not running and not ended:
 * waiting, taken but not started, stuck until its retry, or not submitted yet (a large fan-out is
 * submitted in chunks right after the parent's success).
 */
export interface ChildCounts {
  total: number;
  waiting: number;
  running: number;
  success: number;
  failed: number;
  cancelled: number;
  /** Failed children whose policy removed their dependency (`remove`): ended, counted neither as success nor failed. */
  removed: number;
  /** When the last child ended (ms); absent while some have not. */
  ended?: number;
}

export type JobDescription = Pick<Job, 'task' | 'group' | 'priority' | 'maxRetries'> &
  Partial<Pick<Job, 'subject' | 'submitter' | 'maxRuntime' | 'tracker' | 'occurrence' | 'parent' | 'dedupKey' | 'batch'>>;

/**
 * Where a job read back keeps the trace context (a W3C traceparent) its submit stored, when a
 * tracer made one: a symbol, so that it is no field of {@link Job} and is never printed.
 */
export const TRACE = Symbol('trace');

/**
 * Where a job read back keeps why its description could not be decoded (its args, most likely:
 * a raw writer, another build, a corrupted value), when it could not: a symbol, so that it is no
 * field of {@link Job}. The fields decoded before the fault are set; an executor fails such a job
 * at once, without running it (an UndecodableJobError).
 */
export const UNDECODABLE = Symbol('undecodable');

/** The key msgpackr's object decoding renames (`__proto_`), so that it cannot set a prototype. */
const PROTO_KEY = Buffer.from('__proto__');

/** Decodes maps as Map, which keep every key as it is; otherwise as msgpackr's `unpack`. */
const mapUnpackr = new Unpackr({ useRecords: false, mapsAsObjects: false });

/** `v` with every Map (of {@link mapUnpackr}) made a plain object, each key its own property. */
function plainObjects(v: unknown): unknown {
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, x] of v) {
      // (defined, not assigned: a key `__proto__` is an own property, and sets no prototype)
      Object.defineProperty(o, String(k), { value: plainObjects(x), writable: true, enumerable: true, configurable: true });
    }
    return o;
  }
  if (Array.isArray(v)) for (let i = 0; i < v.length; i++) v[i] = plainObjects(v[i]);
  return v;
}

/**
 * Decodes a packed value (args, a result) to what was packed: as msgpackr's `unpack`, but a key
 * `__proto__` stays an own property of its object, as a caller's object (`JSON.parse`) has it,
 * where `unpack` renames it `__proto_`. Only a value whose bytes hold that key takes the slower
 * way through Maps.
 */
export function unpackValue(packed: Buffer): unknown {
  return packed.includes(PROTO_KEY) ? plainObjects(mapUnpackr.unpack(packed)) : unpack(packed);
}

/** `undefined` packed: the args of a description that has none but a trace after them. */
const NO_ARGS = pack(undefined);

/**
 * Packs a job's description; `packedArgs` is its args as MessagePack, empty when it has none, and
 * `trace` the trace context to store, when there is one. Gives the bytes as the parts to write one
 * after the other (the fields, then the args when there are any, then the trace), so that they
 * are copied once, into the call that carries them.
 */
export function packDescription(d: JobDescription, packedArgs: Buffer, trace?: string): Buffer[] {
  const head = pack(DESCRIPTION.map((field) => d[field] ?? null));
  // A fixarray's first byte holds its length: one or two more elements, packed already.
  if (trace !== undefined) {
    head[0] += 2;
    return [head, packedArgs.length ? packedArgs : NO_ARGS, pack(trace)];
  }
  if (!packedArgs.length) return [head];
  head[0] += 1;
  return [head, packedArgs];
}

/** The fields (and args, when there are any) of a packed description. */
export function unpackDescription(packed: Buffer): JobDescription & { args?: unknown } {
  return assignDescription({}, packed) as JobDescription & { args?: unknown };
}

/**
 * Sets on `target` the fields (and args, when there are any) of a packed description: one
 * MessagePack array in the job hash's field `d`, the fields of DESCRIPTION (src/redis/wire.ts) in
 * order (nil when absent), then the packed args when there are any; when the submit stored a
 * trace context, the args (`undefined` when none) and then the trace, set under {@link TRACE}.
 */
export function assignDescription(target: Record<string | symbol, unknown>, packed: Buffer): Record<string, unknown> {
  let values: unknown[];
  try {
    values = unpackValue(packed) as unknown[];
    if (!Array.isArray(values)) throw new Error('it is not a MessagePack array');
  } catch (err) {
    values = decodableFields(packed);
    const what = values.length >= DESCRIPTION.length ? 'its args' : 'its description';
    target[UNDECODABLE] = `${what} cannot be decoded (${err instanceof Error ? err.message.slice(0, 200) : String(err)})`;
  }
  const n = DESCRIPTION.length;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    // times past 2^32 ms come back as 64-bit integers (bigint) when the scripts packed them
    if (v !== null && v !== undefined) target[DESCRIPTION[i]] = typeof v === 'bigint' ? Number(v) : v;
  }
  if (values.length > n + 1) {
    if (values[n] !== undefined) target.args = values[n];
    target[TRACE] = values[n + 1];
  } else if (values.length > n) target.args = values[n];
  return target;
}

/**
 * The elements of a packed description that decode, in order, up to the first that does not
 * (none when it is no MessagePack array): the fields, when only the args are undecodable.
 */
function decodableFields(packed: Buffer): unknown[] {
  const first = packed[0];
  // the array's header: fixarray, array 16, array 32
  const header = first >= 0x90 && first <= 0x9f ? 1 : first === 0xdc ? 3 : first === 0xdd ? 5 : 0;
  const values: unknown[] = [];
  if (header === 0 || packed.length <= header) return values;
  try {
    unpackMultiple(packed.subarray(header), (v: unknown) => {
      values.push(v);
    });
  } catch {
    // (what decoded before the fault is kept)
  }
  return values;
}

const NUMBER_FIELDS = new Set([
  'retries',
  'submitted',
  'started',
  'finished',
  'due',
  'runAt',
  'taken',
  'takeSeq',
  'progress',
  'pid',
]);
/** The job hash's dedup fields (see lua/includes/dedup) as the Job's. */
const DEDUP_UNTIL_OF: Record<string, Job['dedupUntil']> = {};
for (const [until, code] of Object.entries(DEDUP_UNTIL)) DEDUP_UNTIL_OF[code] = until as Job['dedupUntil'];
/**
 * Hash fields that copy the description for the scripts' hot paths (see lua/includes/addJob),
 * and the scripts' own bookkeeping of the passes of a job its executor had no handler for
 * (lua/includes/unhandled): no field of a Job.
 */
const COPIES = new Set<string>(['group', 'tracker', 'occurrence', 'unhandled', 'passes', 'dd']);

/** The child count of each hash field (CHILD_FIELDS). */
const CHILD_COUNT = new Map<string, keyof typeof CHILD_FIELDS>(
  Object.entries(CHILD_FIELDS)
    .filter(([count]) => count !== 'continuation')
    .map(([count, field]) => [field, count as keyof typeof CHILD_FIELDS]),
);

/** The failure policy of each stored code (FAILURE_POLICY). */
const POLICY_OF = new Map<string, FailurePolicy>(
  Object.entries(FAILURE_POLICY).map(([policy, code]) => [code, policy as FailurePolicy]),
);

/** A parent's {@link ChildCounts} from its hash's count fields. */
function childCounts(c: Partial<Record<keyof typeof CHILD_FIELDS, number>>): ChildCounts {
  const total = c.total ?? 0;
  const running = c.running ?? 0;
  const success = c.success ?? 0;
  const failed = c.failed ?? 0;
  const cancelled = c.cancelled ?? 0;
  const removed = c.removed ?? 0;
  const out: ChildCounts = {
    total,
    waiting: Math.max(0, total - running - success - failed - cancelled - removed),
    running,
    success,
    failed,
    cancelled,
    removed,
  };
  if (c.ended !== undefined) out.ended = c.ended;
  return out;
}

/** Builds job `id` from an HGETALL reply given as a flat [field, value, ...] list of Buffers. */
export function decodeJob(id: string, flat: Buffer[]): Job {
  const job: Record<string, unknown> = { id, retries: 0, subject: '', submitter: '' };
  let children: Partial<Record<keyof typeof CHILD_FIELDS, number>> | undefined;
  for (let i = 0; i < flat.length; i += 2) {
    const field = flat[i].toString();
    const raw = flat[i + 1];
    if (field === 'd') {
      assignDescription(job, raw);
      continue;
    }
    if (COPIES.has(field)) continue;
    if (field === CHILD_FIELDS.continuation) {
      job.continuation = raw.toString();
      continue;
    }
    if (field === FLOW_FIELDS.failedBy) {
      job.failedBy = raw.toString();
      continue;
    }
    if (field === FLOW_FIELDS.policy) {
      const policy = POLICY_OF.get(raw.toString());
      if (policy) job.onFailure = policy;
      continue;
    }
    const count = CHILD_COUNT.get(field);
    if (count) {
      children ??= {};
      children[count] = Number(raw.toString());
      continue;
    }
    if (field === 'result') {
      if (raw.length > 0) job[field] = unpackValue(raw);
      continue;
    }
    const value = raw.toString();
    if (value === '') continue;
    if (NUMBER_FIELDS.has(field)) job[field] = Number(value);
    else if (field === 'ddm') job.dedupUntil = DEDUP_UNTIL_OF[value];
    else if (field === 'ddx') job.dedupExpires = Number(value);
    else if (field === 'cancel') job.cancelRequested = value === '1';
    else job[field] = value;
  }
  if (children) job.children = childCounts(children);
  return job as unknown as Job;
}

/** Builds job `id` from an HGETALL reply given as an object of Buffers, or null when empty. */
export function decodeJobObject(id: string, obj: Record<string, Buffer>): Job | null {
  const flat: Buffer[] = [];
  for (const [k, v] of Object.entries(obj)) flat.push(Buffer.from(k), v);
  return flat.length ? decodeJob(id, flat) : null;
}
