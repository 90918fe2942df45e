/** Errors Rota throws. Each names what is wrong, so a caller can fix it. */

/** Base class of every error Rota throws on purpose. */
export class RotaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Input was refused; `field` names the offending field (e.g. `args.items[2]`). Nothing was written. */
export class ValidationError extends RotaError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** Payload over the configured size limit. Nothing was written. */
export class PayloadTooLargeError extends ValidationError {
  constructor(
    field: string,
    readonly size: number,
    readonly limit: number,
  ) {
    super(field, `is ${size} bytes packed, over the limit of ${limit} bytes`);
  }
}

/**
 * Throw this from a handler to fail the job at once, without retries.
 * @example throw new PermanentError('invoice 42 does not exist')
 */
export class PermanentError extends RotaError {}

/**
 * The thread or child process of an isolated task ended while it ran the job: an uncaught
 * exception or unhandled rejection, an exit, a signal (kill -9, a native crash), out of memory,
 * or it could not start. Only that attempt fails (it is retried as usual); `reason` says which.
 */
export class IsolateError extends RotaError {
  constructor(
    readonly reason: 'crash' | 'exit' | 'oom' | 'killed' | 'abandoned' | 'recycled' | 'memory' | 'start' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

/** A job's handler did not finish within its `maxRuntime` (plus the grace period). */
export class TimeoutError extends RotaError {}

/**
 * A job names a task that no live executor of its queue has had a handler for during the
 * executors' `unknownTaskGraceMs` (an executor without it puts the job back for those with it).
 */
export class UnknownTaskError extends PermanentError {
  constructor(readonly task: string) {
    super(`unknown task "${task}": no live executor of the queue has a handler for it`);
  }
}

/**
 * A job's stored description (its args, most likely) cannot be decoded: it was written by a raw
 * writer or another build, or corrupted. The executor fails the job with this error at once,
 * without running it or retrying it; `reason` is the decoder's.
 */
export class UndecodableJobError extends PermanentError {
  constructor(
    readonly jobId: string,
    readonly reason: string,
  ) {
    super(`job "${jobId}" cannot be run: ${reason}; it was failed without running`);
  }
}

/**
 * A periodic task's stored record cannot be read back (its stored schedule, most likely): it was
 * written by a raw writer or another build, or corrupted. `reason` says what is wrong.
 */
export class UndecodableTaskError extends RotaError {
  constructor(readonly reason: string) {
    super(`a periodic task cannot be read: ${reason}`);
  }
}

/**
 * Redis could not be reached or refused the client. `target` is where it was looked for, with
 * any password masked; `reason` is the cause's code (`WRONGPASS`, `NOAUTH`, `ECONNREFUSED`,
 * `ENOTFOUND`, a TLS certificate error such as `DEPTH_ZERO_SELF_SIGNED_CERT`, ...).
 */
export class ConnectionError extends RotaError {
  constructor(
    readonly target: string,
    readonly reason: string,
    detail: string,
  ) {
    super(`cannot reach Redis at ${target}: ${detail}`);
  }
}

/**
 * Redis refused a write because its memory is full: its used memory reached `maxmemory`, and its
 * `maxmemory-policy` evicts nothing (`noeviction`, as a queue needs). The refused command
 * (`command`, e.g. `FCALL submit`) wrote nothing. Free memory (clean finished jobs, see
 * `queue.clean`) or raise `maxmemory`; then send it again (a submit with the same `id` adds no
 * second job).
 */
export class RedisFullError extends RotaError {
  constructor(
    readonly queue: string,
    readonly command: string,
    /** What Redis answered (its OOM error). */
    readonly reply: string,
  ) {
    super(
      `Redis refused ${command} on queue "${queue}": its memory is full (used memory reached maxmemory, and maxmemory-policy evicts nothing); nothing was written. Free memory or raise maxmemory, then try again (Redis: ${reply})`,
    );
  }
}

/**
 * The queue's data is of a schema this build cannot read (its `schema` and `schemaCompat` in the
 * shard's `meta` hash; the rule: docs/upgrading.md): older than the oldest it reads (`rota migrate`
 * raises it), or written by a newer build in a format this one does not know (run a newer build).
 * Nothing was written.
 */
export class SchemaMismatchError extends RotaError {
  /**
   * @param found - the schema the queue records
   * @param expected - the schema this build writes
   * @param remedy - what to run: `migrate` (the data is too old) or `upgrade` (too new)
   * @param needs - for `upgrade`, the oldest build schema that reads the data
   */
  constructor(
    readonly queue: string,
    readonly found: string,
    readonly expected: number,
    readonly remedy: 'migrate' | 'upgrade' = 'upgrade',
    readonly needs: number = Number(found),
  ) {
    super(
      remedy === 'migrate'
        ? `queue "${queue}" holds data of schema version ${found}, older than this Rota (schema version ${expected}) reads; run \`rota migrate --queue ${queue}\` of this version first; nothing was written`
        : `queue "${queue}" holds data of schema version ${found}, which needs a Rota of schema version ${needs} or newer, but this Rota reads and writes schema version ${expected}; run a newer Rota; nothing was written`,
    );
  }
}

/**
 * `rota migrate` knows no step that leads a shard of the queue on from the schema it records (a
 * schema of another build's steps, or older than the oldest step of this one). Nothing was written.
 */
export class MigrationPathError extends RotaError {
  constructor(
    readonly queue: string,
    readonly found: string,
    readonly to: number,
  ) {
    super(
      `queue "${queue}" holds data of schema version ${found}, and this Rota has no migration step from it to schema version ${to}; migrate with the Rota that wrote it (or one of the versions between, docs/upgrading.md); nothing was written`,
    );
  }
}

/**
 * The queue was laid out with another shard count (its `shards` in `{rota:<queue>}:meta`) than
 * this part of Rota is configured with. Nothing was written. Configure the count the queue has,
 * or change the queue's with `rota reshard`.
 */
export class ShardCountError extends RotaError {
  constructor(
    readonly queue: string,
    readonly found: number,
    readonly configured: number,
  ) {
    super(
      `queue "${queue}" has ${found} shard${found === 1 ? '' : 's'}, but this part of Rota is configured with shards: ${configured}; nothing was written (configure shards: ${found}, or change the queue's count with rota reshard)`,
    );
  }
}

/**
 * The queue's shard count is being changed: `rota reshard` (or `reshard()`) started and has
 * not finished, and no other part of Rota may use the queue until it has. Nothing was written.
 * Run the reshard again to finish it (`rota reshard <queue> --to <to>`), then start everything
 * with `shards: <to>`.
 */
export class ReshardInProgressError extends RotaError {
  constructor(
    readonly queue: string,
    readonly from: number,
    readonly to: number,
  ) {
    super(
      `queue "${queue}" is being resharded from ${from} to ${to} shards and cannot be used until that is done; nothing was written (finish it with: rota reshard ${queue} --to ${to})`,
    );
  }
}

/**
 * A reshard (`rota reshard`, `reshard()`) refused to start, or to go on: `reason` says why
 * (`executors`: an executor is live; `runs`: a run is in progress; `ids`: two jobs of one id would
 * meet in one shard; `underway`: another reshard of the queue is under way; `changed`: the queue
 * changed under it). Nothing was written by the step it refused.
 */
export class ReshardRefusedError extends RotaError {
  constructor(
    readonly queue: string,
    readonly reason: 'executors' | 'runs' | 'ids' | 'underway' | 'changed' | 'batches',
    message: string,
  ) {
    super(`cannot reshard queue "${queue}": ${message}`);
  }
}

/**
 * With `durability: 'replicated'`, fewer replicas than `replicaAcks` (default 1) acknowledged a
 * write within the timeout (`WAIT`), or the connection was made again between the write and its
 * `WAIT` (`reconnected`), so what the replicas have is unknown.
 * The write may be on the primary, but a failover now could lose it: a submit may be repeated
 * with the same `id`; an executor sends the outcome again.
 */
export class ReplicationError extends RotaError {
  constructor(
    readonly queue: string,
    readonly timeoutMs: number,
    /** Replicas the write waited for, and those that acknowledged it. */
    readonly wanted = 1,
    readonly acked = 0,
    /** The write's connection was closed before its WAIT: a WAIT on the new one would count nothing of it. */
    readonly reconnected = false,
  ) {
    super(
      reconnected
        ? `queue "${queue}": the connection closed between the write and its WAIT, so no replica is known to have it (durability 'replicated')`
        : wanted === 1
          ? `queue "${queue}": no replica acknowledged the write within ${timeoutMs} ms (durability 'replicated')`
          : `queue "${queue}": ${acked} of the ${wanted} replicas asked for acknowledged the write within ${timeoutMs} ms (durability 'replicated')`,
    );
  }
}

/**
 * A bulk submit written in several calls failed at one of them after the calls before it were
 * written: `written` are the jobs those wrote (in order, the first of the bulk); none after
 * them was written. `cause` is the failure.
 */
export class BulkSubmitError extends RotaError {
  constructor(
    readonly written: ReadonlyArray<{ id: string }>,
    cause: unknown,
  ) {
    super(
      `bulk submit stopped after ${written.length} jobs were written: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    this.cause = cause;
  }
}

/** A fan-out (ctx.fanOut) of more children than one call takes. Nothing was written. */
export class FanOutLimitError extends ValidationError {
  constructor(
    readonly count: number,
    readonly limit: number,
  ) {
    super('items', `holds ${count} items, over the limit of ${limit} children a fanOut call`);
  }
}

/**
 * A periodic task's timer gave a next occurrence that is not after the one before: it would run
 * the same occurrence forever. The scheduler disables the task with this message as its note.
 */
export class TimerStalledError extends RotaError {
  constructor(
    readonly taskId: string,
    readonly occurrence: number,
  ) {
    super(`timer of periodic task ${taskId} does not advance after ${new Date(occurrence).toISOString()}`);
  }
}

/**
 * The function library loaded under Rota's name holds other code than this Rota's: someone
 * replaced it (`FUNCTION LOAD REPLACE`). Rota calls none of its functions. Load the genuine
 * library with `rota migrate` as the deploy user (docs/operations.md#acl), which replaces it.
 */
export class LibraryMismatchError extends RotaError {
  constructor(
    readonly library: string,
    readonly server: string,
  ) {
    super(
      `the function library ${library} on ${server} holds other code than this Rota's (it was replaced); no function of it was called. Run \`rota migrate\` as the deploy user to load the genuine library`,
    );
  }
}

/**
 * Thrown by {@link parseTimer} (and the kind-specific parsers) when a timer
 * specification cannot be parsed. The message names the offending part and
 * its position (0-based character offset into `spec`).
 */
export class TimerSyntaxError extends RotaError {
  /** The specification that was rejected, as given. */
  readonly spec: string;
  /** 0-based offset of the offending part in `spec`. */
  readonly position: number;
  /** Which part was rejected, e.g. `"minute"`, `"weekday"`, `"timezone"`, `"duration"`. */
  readonly part: string;

  constructor(spec: string, position: number, part: string, reason: string) {
    super(`Invalid timer ${JSON.stringify(spec)}: ${part} at position ${position}: ${reason}`);
    this.spec = spec;
    this.position = position;
    this.part = part;
  }
}

/**
 * A late completion that the queue refused because the run's lease had been lost: emitted only for
 * a run this executor started (not for a job it took and handed back unstarted, nor for the resend
 * of an outcome the queue had applied).
 */
export class LeaseLostError extends RotaError {
  constructor(readonly jobId: string) {
    super(`completion of job ${jobId} refused: its lease was lost (recovered or taken over by another executor)`);
  }
}

/**
 * Rota's function library cannot be put on the server: this client may not run `FUNCTION LOAD`
 * (load it with `rota migrate` as the deploy user, docs/operations.md), may not list functions to
 * check it, or the server is older than Redis 7.0; or the package's `lua/` folder is missing or
 * its scripts do not build into a library (a broken install).
 */
export class ScriptLoadError extends RotaError {}

/**
 * Redis answered what this Rota does not expect: a script reply of an unknown form (the server
 * runs another build's library, in a mixed deploy), or a transaction that did not run.
 */
export class UnexpectedReplyError extends RotaError {}

/**
 * A batch refused jobs (docs/jobs.md#batches): it is `gone` (never opened, or expired), `closed`
 * (only its own running jobs may add to it then), `completed` (its jobs all ended after its
 * close), or the job adding them (`stranger`) does not run in it. Nothing was written.
 */
export class BatchClosedError extends RotaError {
  constructor(
    readonly batch: string,
    readonly reason: 'gone' | 'closed' | 'completed' | 'stranger',
  ) {
    const why = {
      gone: 'does not exist (never opened, or expired)',
      closed: 'is closed: only its own running jobs may add to it',
      completed: 'has completed: every job of it ended after its close',
      stranger: 'does not take jobs from this job: it does not run in the batch (its lease was lost, or it is of another batch)',
    }[reason];
    super(`batch ${batch} ${why}; nothing was written`);
  }
}
