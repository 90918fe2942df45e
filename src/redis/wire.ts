/**
 * Every value the Lua scripts and the TypeScript side share by position or by code: reply widths,
 * single-letter codes, field orders, lease marks, the schema version. This module is their one
 * definition: the library builder (./library.ts) turns {@link LUA_WIRE} into the include
 * `includes/wire`, Lua `local` declarations loaded before every other include, and no Lua file
 * defines these names itself (test/redis/wire.test.ts checks both).
 *
 * A change to any of these values changes the data format: bump {@link SCHEMA_VERSION}.
 */

/**
 * The data format's version this build writes, recorded per queue shard as field `schema` of its
 * `meta` hash by the first client to use it, and raised by `rota migrate`'s steps (the version
 * rule: docs/upgrading.md; the format: docs/format.md).
 */
export const SCHEMA_VERSION = 7;

/**
 * The oldest recorded schema this build reads without a migration: a shard recording an older one
 * is refused until `rota migrate` raises it (SchemaMismatchError).
 */
export const SCHEMA_READS_FROM = 7;

/**
 * The fields of a shard's `meta` hash that version its data: `schema`, the format its records are
 * in (every record of it at least that new); `compat`, the oldest build schema that reads the data
 * (absent: the `schema` itself); and while a migration step is under way, the schema it leads to
 * (`step`), the SCAN cursor it goes on from (`cursor`) and the records it rewrote so far (`done`).
 */
export const META = {
  schema: 'schema',
  compat: 'schemaCompat',
  step: 'migrateStep',
  cursor: 'migrateCursor',
  done: 'migrateDone',
} as const;

/**
 * What one batch of a migration step answers first (lua/migrate-job-field.lua): it ran (`ok`,
 * then the records the step rewrote so far, and whether the step is complete), or it wrote
 * nothing since the shard is not where the caller thought: at another schema or step (`stale`), or
 * at another cursor (`moved`: another migrate runs, or one was killed after its batch).
 */
export const MIGRATE_BATCH = { ok: 'o', stale: 's', moved: 'm' } as const;

/**
 * Longest delay a job may have (ms), and its latest due time (`runAt`): 9,999,999,999,999 ms,
 * some 317 years, or as a time the year 2286. A failed run's retry backoff (retryDelay × 2^retries)
 * is capped at it too, so that every due time stays a whole number of ms a Date can hold.
 */
export const MAX_DELAY_MS = 9_999_999_999_999;

/** The member of the queue's `marker` whose addition wakes one executor blocked on it (BZPOPMIN). */
export const WAKE_MEMBER = 'w';

/** Entries per job in a take reply (see lua/includes/take), after the first job's take sequence. */
export const TAKEN_WIDTH = 4;

/**
 * The marks of a run's member of `leases` (token, mark, job id): the job is scheduled, running,
 * or its cancel was requested.
 */
export const SCHEDULED_MARK = ':';
export const RUNNING_MARK = '!';
export const CANCEL_MARK = '?';

/**
 * The fields of a group's packed record in the `groups` hash, in order: little-endian 32-bit
 * integers. `running` is kept only while the group has a limit (countsRunning in lua/includes/common).
 * `rate` and `per`: its rate limit (at most `rate` starts in any `per` ms; 0: none); `logged`: the
 * starts its rate log (`g:<group>:rl`) holds, trimmed to the window when the limit may bind. A
 * group without a rate has the short record: the fields before `rate` (which, with `per` and
 * `logged`, must stay last).
 */
export const GROUP_FIELDS = [
  'running',
  'stuck',
  'nr',
  'nh',
  'nl',
  'cnt',
  'turns',
  'limit',
  'weight',
  'paused',
  'ready',
  'rate',
  'per',
  'logged',
] as const;

/**
 * The first character of a member of `delayed` that is a group, not a job: a group at its rate,
 * parked until its window frees (score). Job ids cannot begin with it.
 */
export const GROUP_DUE_MARK = '\u0000';

/**
 * A job's description (field `d` of its hash): one MessagePack array of these fields in this
 * order (nil when absent), then the packed args when there are any; a job whose submit was traced
 * has its args (nil-like `undefined` when none) and then its trace context (see src/queue/job.ts).
 * The scripts read priority and maxRetries by their position.
 */
export const DESCRIPTION = [
  'task',
  'group',
  'priority',
  'maxRetries',
  'subject',
  'submitter',
  'maxRuntime',
  'tracker',
  'occurrence',
  'parent',
  'dedupKey',
  'batch',
] as const;

/**
 * Deduplication (a submit's `dedup`, see lua/includes/dedup): what a dedup key holds the key
 * `dd:<group bytes>:<group><key>` for, as the first character of the key's value (the holder's
 * job id follows), and of the job hash's field `ddm`: until the job starts, until it ends, or for
 * its whole TTL whatever the job's state.
 */
export const DEDUP_UNTIL = { start: 's', end: 'e', ttl: 't' } as const;
/**
 * The fields of a submit call's dedup list (submit.lua ARGV[5]), per job that has a dedup key:
 * its position in the call's jobs (from 1), its key, DEDUP_UNTIL code, TTL (ms, '' none), and
 * what a duplicate does to the job it meets: `r` replace it while it is pending, `x` restart the
 * key's TTL, `rx` both ('' neither).
 */
export const DEDUP_FIELDS = ['at', 'key', 'until', 'ttl', 'debounce'] as const;
/** What a submit answers per job (submit.lua): added, its id existed, deduplicated, deduplicated and the existing job replaced. */
export const SUBMIT_ANSWER = { added: 1, existed: 0, deduplicated: 2, replaced: 3 } as const;

/**
 * The fields of a job in a submit call's list, in order (see lua/includes/addJob): the first
 * SUBMIT_WIDTH for each job, all of them when some job of the call has a due time (`runAt`:
 * absolute ms, or `+` and a delay in ms from the server's now).
 */
export const SUBMIT_FIELDS = ['id', 'description', 'group', 'priority', 'runAt'] as const;
export const SUBMIT_WIDTH = 4;
/** The first character of a submitted `runAt` that is a delay from the server's now. */
export const DELAY_MARK = '+';

/**
 * A run's outcome as a finish call sends it (lua/finish.lua). `fannedOut`: a success whose run
 * staged children (ctx.fanOut); the finish submits them with the parent's success.
 */
export const OUTCOME = {
  success: 's',
  failed: 'f',
  permanent: 'p',
  cancelled: 'c',
  released: 'r',
  fannedOut: 'o',
  /** The executor has no handler for the job's task: passed on to those that have one (includes/unhandled). */
  unhandled: 'u',
} as const;
export type OutcomeCode = (typeof OUTCOME)[keyof typeof OUTCOME];

/** Prefix of the outcome of a run whose start was not sent: the finish marks it started first. */
export const UNSTARTED_PREFIX = '+';

/**
 * The fields of a fan-out parent's job hash that count its children (ctx.fanOut): how many it
 * submitted, how many run now, how many ended in each final state, and when the last one ended (ms).
 */
export const CHILD_FIELDS = {
  total: 'ct',
  running: 'cr',
  success: 'cs',
  failed: 'cf',
  cancelled: 'cc',
  ended: 'ce',
  /** Failed children whose policy removed their dependency (`remove`): ended, counted neither as success nor failed. */
  removed: 'cm',
  /** The id of the job that waits on these children besides the parent: a fan-out's continuation (`after`). */
  continuation: 'cn',
} as const;

/**
 * The state of a job that waits for its children to end (a flow's parent, a fan-out's
 * continuation): in no list, counted in `counts`; released to `waiting` by the call that records
 * its last child's end (lua/includes/children).
 */
export const WAITING_CHILDREN = 'waiting-children';

/**
 * Fields of a flow job's hash: `fp` its failure policy as its parent's child (FAILURE_POLICY;
 * absent: `fail`), `fb` (on a job that failed because of a child) the id of that child.
 */
export const FLOW_FIELDS = { policy: 'fp', failedBy: 'fb' } as const;

/** What a child's failure does to the job waiting on it (named after BullMQ's options). */
export const FAILURE_POLICY = { fail: '', ignore: 'i', remove: 'r', continue: 'c' } as const;

/**
 * The fields of a job in a flow chunk (a fan-out chunk whose list begins FLOW_CHUNK_MARK): the
 * first SUBMIT_WIDTH of SUBMIT_FIELDS, then how many children it waits for ('' none: it is
 * runnable) and its failure policy as a child (FAILURE_POLICY).
 */
export const FLOW_RECORD = ['id', 'description', 'group', 'priority', 'children', 'policy'] as const;
export const FLOW_WIDTH = 6;
/** The first byte of a staged chunk in the flow format (never the first byte of a MessagePack array). */
export const FLOW_CHUNK_MARK = 'F';
/** The end of a staging's child count when its next entry is the continuation (fanOut `after`). */
export const CONTINUATION_MARK = '+';

/**
 * A flow's children in another queue (docs/architecture.md#flows, "Cross-queue children"):
 * `mark` the first byte of a staged entry that is a remote child's subtree (fanout.lua moves it
 * to the `xsub` outbox); job hash fields: `queue` (on a remote child) its parent's queue ref,
 * `seq` (on it) how many ends and re-opens it sent, `index` (on the parent, + child index) the
 * child's queue ref. A queue ref is `<queue> <shard> <shards>`.
 */
export const CROSS = { mark: 'X', queue: 'xq', seq: 'xs', index: 'x:' } as const;

/** Entries per run in a finish call's packed runs: job id, lease token, outcome, payload. */
export const RUN_WIDTH = 4;

/** The character a finish call answers each run's end state as. */
export const END_CODES = { success: 's', waiting: 'w', cancelled: 'c', stuck: 'k', failed: 'f', delayed: 'd' } as const;
/** The end code of a run the finish refused (its lease was lost). */
export const END_REFUSED = '-';

/** A periodic task's overlap policy, as the first character of its staged occurrences. */
export const OVERLAP_CODE = {
  allow: 'a',
  skip: 's',
  'buffer-one': 'b',
  'cancel-previous': 'c',
  'buffer-all': 'q',
} as const;

/** The task fields periodic-claim answers per claimed task, after its id and claim token. */
export const CLAIM_FIELDS = [
  'nextrun',
  'timer',
  'timezone',
  'catchup',
  'catchupWindow',
  'triggered',
  'enabled',
  'task',
  'group',
  'args',
  'subject',
  'submitter',
  'priority',
  'maxRetries',
  'maxRuntime',
  'overlap',
  'rule',
  'period',
  'runs',
  'staged',
  'kind',
  'gs',
] as const;

/**
 * The fields of a periodic-stage record, in order: the claim's id and token, the plan the
 * scheduler computed (the trigger served, the new nextrun and period, missed occurrences, the
 * occurrences to stage), then the task's fields as the claim read them (`storedPeriod` is its
 * `period`; `staged` its unreleased staged members, so that the stage reads nothing of the task).
 */
export const STAGE_FIELDS = [
  'id',
  'token',
  'triggered',
  'nextrun',
  'period',
  'missed',
  'missedFirst',
  'missedLast',
  'occurrences',
  'overlap',
  'rule',
  'enabled',
  'storedPeriod',
  'task',
  'group',
  'args',
  'subject',
  'submitter',
  'priority',
  'maxRetries',
  'maxRuntime',
  'failure',
  'excluded',
  'dues',
  'runs',
  'ended',
  'staged',
  'idSuffix',
] as const;

/**
 * Fields of an events stream entry besides the states: changes with an error, failed periodic
 * runs, fan-out parents whose children all ended (`[parent id, total, success, failed,
 * cancelled]` each), progress updates (`[job id, progress]` each).
 */
export const EVENT_ERRORS_FIELD = 'b';
export const EVENT_PERIODIC_FAILED_FIELD = 'p';
export const EVENT_CHILDREN_ENDED_FIELD = 'e';
export const EVENT_PROGRESS_FIELD = 'g';
/** Periodic tasks a scheduler disabled because their timer stopped advancing: `[task id, occurrence, error]` each. */
export const EVENT_TIMER_FAILED_FIELD = 't';
/** Periodic tasks that ended (no occurrence left): JSON list of task ids (`periodic.ended` events). */
export const EVENT_PERIODIC_ENDED_FIELD = 'n';
/** Submits deduplicated (lua/includes/dedup): `[holder's job id, its state, the dedup key, 1 when replaced else 0]` each. */
export const EVENT_DEDUPLICATED_FIELD = 'u';
/** Periodic tasks paused because a run failed (`pauseOnFailure`): `[job id, task id, occurrence, note]` each. */
export const EVENT_PERIODIC_PAUSED_FIELD = 'z';
/** Jobs released from waiting-children: `[job id, why]` each, why `children` (all ended) or `continue` (a child's policy). */
export const EVENT_RELEASED_FIELD = 'r';
/** Batches that completed or succeeded (lua/includes/batches): `[batch id, 'complete'|'success', total, success, failed, cancelled]` each. */
export const EVENT_BATCH_FIELD = 'a';

/**
 * Batches (docs/jobs.md#batches; lua/includes/batches). The fields of a batch's hash
 * `bt:<batch id>`: its jobs added (`total`), not ended yet (`pending`), ended in each final state,
 * when it was opened, closed, completed (every job ended after its close) and succeeded (every
 * job succeeded), its callbacks (`onComplete`, `onSuccess`: one-job submit lists) and its
 * description. `ttl`: how long (ms) a batch's keys are kept after its last write (30 days);
 * `complete`, `succeed`: the ends of its callbacks' ids (`<batch id>/complete`, `/success`).
 * What lua/batch.lua answers for an add it refuses: the batch is `gone`, closed (`shut`),
 * completed (`over`), or the job adding to it does not run in it (`stranger`).
 */
export const BATCH = {
  total: 'n',
  pending: 'p',
  success: 's',
  failed: 'f',
  cancelled: 'x',
  opened: 'o',
  closed: 'c',
  completed: 'ce',
  succeeded: 'se',
  onComplete: 'oc',
  onSuccess: 'os',
  description: 'd',
  ttl: 30 * 24 * 3600 * 1000,
  complete: '/complete',
  succeed: '/success',
  gone: 'gone',
  shut: 'closed',
  over: 'completed',
  stranger: 'stranger',
} as const;

/**
 * How a periodic task's run history marks an occurrence that was skipped, or missed, and an event
 * rule's run that a newer event replaced (`~replaced@<its occurrence>@<the new run's occurrence>`).
 */
export const HISTORY_SKIPPED = '~skipped@';
export const HISTORY_MISSED = '~missed@';
export const HISTORY_REPLACED = '~replaced@';
/** A task whose timer stopped advancing at that occurrence (`~failed@<occurrence>@<error>`); the scheduler disabled it. */
export const HISTORY_FAILED = '~failed@';
/** An occurrence skipped by one of the task's exclusions (`~excluded@<occurrence>`). */
export const HISTORY_EXCLUDED = '~excluded@';

/**
 * How many runs a job shows at most: its current or last one (in its hash) and the earlier ones
 * its attempts list `att:<id>` keeps (lua/includes/attempts, src/redis/attempts.ts).
 */
export const ATTEMPTS_KEPT = 25;

/**
 * How long the history hashes are kept (s, their expiry, set by lua/includes/history): the
 * minute hashes 25 hours, the day hashes 91 days, the per-group minute hashes 2 hours (the
 * fairness view looks back an hour at most). See src/redis/history.ts.
 */
export const HISTORY_TTL_S = { minute: 25 * 3600, day: 91 * 86400, groups: 2 * 3600 } as const;

/** The Lua pattern of a `leases` member (token digits, a mark, the job id), capturing the id. */
const LEASE_ID_PATTERN = `^%d+[${SCHEDULED_MARK}${RUNNING_MARK}${CANCEL_MARK}](.*)$`;

/**
 * What reshard-out.lua answers first: the jobs it took out (`taken`); the jobs `moving` held
 * already, taking nothing (`pending`: copy and forget those first); or, taking nothing, that a
 * group list's tail was not the jobs the caller read (`changed`).
 */
export const RESHARD_OUT = { taken: 't', pending: 'p', changed: 'c' } as const;

/** A value the Lua side gets: a number, a string, a list of strings or a table of strings. */
export type WireValue = number | string | readonly string[] | Readonly<Record<string, string | number>>;

/** The names and values injected into the Lua library as `includes/wire`. */
export const LUA_WIRE: Readonly<Record<string, WireValue>> = {
  SCHEMA_VERSION,
  META,
  MIGRATE_BATCH,
  MAX_DELAY_MS,
  WAKE_MEMBER,
  TAKEN_WIDTH,
  SCHEDULED_MARK,
  RUNNING_MARK,
  CANCEL_MARK,
  LEASE_ID_PATTERN,
  GROUP_FIELDS,
  GROUP_DUE_MARK,
  DESCRIPTION,
  SUBMIT_FIELDS,
  SUBMIT_WIDTH,
  DELAY_MARK,
  DEDUP_UNTIL,
  DEDUP_FIELDS,
  SUBMIT_ANSWER,
  RUN_WIDTH,
  OUTCOME_SUCCESS: OUTCOME.success,
  OUTCOME_FAILED: OUTCOME.failed,
  OUTCOME_PERMANENT: OUTCOME.permanent,
  OUTCOME_CANCELLED: OUTCOME.cancelled,
  OUTCOME_RELEASED: OUTCOME.released,
  OUTCOME_FANNED_OUT: OUTCOME.fannedOut,
  OUTCOME_UNHANDLED: OUTCOME.unhandled,
  UNSTARTED_PREFIX,
  CHILD_FIELDS,
  WAITING_CHILDREN,
  FLOW_FIELDS,
  FAILURE_POLICY,
  BATCH,
  FLOW_RECORD,
  FLOW_WIDTH,
  FLOW_CHUNK_MARK,
  CONTINUATION_MARK,
  CROSS,
  END_CODES,
  END_REFUSED,
  OVERLAP_CODE,
  CLAIM_FIELDS,
  STAGE_FIELDS,
  EVENT_FIELD: {
    errors: EVENT_ERRORS_FIELD,
    periodicFailed: EVENT_PERIODIC_FAILED_FIELD,
    childrenEnded: EVENT_CHILDREN_ENDED_FIELD,
    progress: EVENT_PROGRESS_FIELD,
    timerFailed: EVENT_TIMER_FAILED_FIELD,
    periodicEnded: EVENT_PERIODIC_ENDED_FIELD,
    periodicPaused: EVENT_PERIODIC_PAUSED_FIELD,
    deduplicated: EVENT_DEDUPLICATED_FIELD,
    released: EVENT_RELEASED_FIELD,
    batch: EVENT_BATCH_FIELD,
  },
  HISTORY_MARK: {
    skipped: HISTORY_SKIPPED,
    missed: HISTORY_MISSED,
    replaced: HISTORY_REPLACED,
    failed: HISTORY_FAILED,
    excluded: HISTORY_EXCLUDED,
  },
  RESHARD_OUT,
  ATTEMPTS_KEPT,
  // (as text: an EXPIRE's argument goes as it is, where a number is formatted on every call)
  HISTORY_TTL: {
    minute: String(HISTORY_TTL_S.minute),
    day: String(HISTORY_TTL_S.day),
    groups: String(HISTORY_TTL_S.groups),
  },
};

function luaString(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n').replace(/\0/g, '\\000')}'`;
}

function luaValue(v: WireValue): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return luaString(v);
  if (Array.isArray(v)) return `{ ${v.map(luaString).join(', ')} }`;
  return `{ ${Object.entries(v)
    .map(([k, x]) => `[${luaString(k)}] = ${typeof x === 'number' ? String(x) : luaString(x)}`)
    .join(', ')} }`;
}

const isScalar = (v: WireValue): v is number | string => typeof v === 'number' || typeof v === 'string';

/**
 * The Lua source of the include `includes/wire`: one `local` per table of {@link LUA_WIRE}; the
 * numbers and strings are written into the scripts where they are named ({@link inlineWireScalars}),
 * so that they take none of the 200 locals Lua allows the library's main chunk (and a literal is
 * reached for less than an upvalue).
 */
export function wireInclude(): string {
  const lines = Object.entries(LUA_WIRE).map(([name, v]) =>
    isScalar(v) ? `-- ${name} = ${luaValue(v)} (written where it is named)` : `local ${name} = ${luaValue(v)}`,
  );
  return `-- Generated from src/redis/wire.ts: values shared with the TypeScript side.\n-- luacheck: no max line length\n${lines.join('\n')}\n`;
}

/** The wire values that are numbers or strings, by name. */
export const WIRE_SCALARS: ReadonlyMap<string, string> = new Map(
  Object.entries(LUA_WIRE).flatMap(([name, v]) => (isScalar(v) ? [[name, luaValue(v)] as const] : [])),
);

const SCALAR_NAME = new RegExp(`(?<![\\w.'"])(${[...WIRE_SCALARS.keys()].join('|')})(?![\\w'"]|\\s*=[^=])`, 'g');

/**
 * Lua source `text` with each wire number or string it names (`SCHEMA_VERSION`, not a field
 * `t.SCHEMA_VERSION` nor a table key `{ SCHEMA_VERSION = ... }`) written as its literal.
 */
export function inlineWireScalars(text: string): string {
  return text.replace(SCALAR_NAME, (name) => WIRE_SCALARS.get(name) ?? name);
}
