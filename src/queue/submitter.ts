/**
 * A queue's submits: checks specs, gives them ids, and writes them to their shards, coalescing
 * the submit() calls made together (group commit) and splitting bulks into calls of bounded size.
 * {@link Queue.submit} and {@link Queue.submitBulk} delegate here.
 */
import { BulkSubmitError, ValidationError } from '../errors.js';
import type { QueueStore, SubmitReply } from '../redis/queue-store.js';
import { bucketSuffix, byShard, groupBucket, shardOfGroup } from '../redis/shards.js';
import { Batcher } from '../util/batcher.js';
import type { Job } from './job.js';
import type { QueueReader } from './reader.js';
import { type CheckedSpec, checkSpec, type SubmitSpec } from './validate.js';

/**
 * Most bytes one submit call carries: its jobs go as one argument, and Redis refuses an argument
 * over `proto-max-bulk-len` (512 MiB unless configured otherwise) by closing the connection.
 */
const MAX_SUBMIT_BYTES = 512 * 1024 * 1024;
/** Most jobs, and bytes of packed args, that coalesced submit() calls send in one script call. */
const SUBMIT_CHUNK = { jobs: 1000, bytes: 1 << 20 };
/**
 * Submit calls a queue keeps unanswered at most per shard (group commit): submit() calls made
 * while one is unanswered wait for its answer and go together in the next. An idle queue sends at
 * once; a busy one sends fewer, larger calls, so a job costs less as the load grows. Per shard, so
 * that a shard whose primary is down holds back only its own submits.
 */
const SUBMITS_IN_FLIGHT = 1;

/** A submit() call waiting to be sent with the others of its turn. */
interface PendingSubmit {
  spec: CheckedSpec;
  resolve(job: Job): void;
  reject(err: unknown): void;
}

/** `items` in chunks of at most SUBMIT_CHUNK jobs, or bytes of packed args, each (at least one job). */
function submitChunks<T>(items: readonly T[], specOf: (item: T) => CheckedSpec): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = specOf(item).packedArgs.length;
    if (chunk.length === SUBMIT_CHUNK.jobs || (chunk.length > 0 && bytes + size > SUBMIT_CHUNK.bytes)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

function reservedIdError(field: string): ValidationError {
  return new ValidationError(
    field,
    'is the id of a periodic occurrence staged ahead and not submitted yet (reserved for it); nothing was written',
  );
}

let idCounter = 0;
let idMs = 0;
let idTime = '';
/**
 * A new job id for a job of group `group`: time-ordered, unique across processes (a counter and 6
 * random base-36 digits), and ending in the group's bucket, which names its shard (../redis/shards.ts).
 */
export function newJobId(group: string): string {
  return newJobIdIn(bucketSuffix(groupBucket(group)));
}

/** A new job id (as {@link newJobId}) ending in bucket suffix `bucket` (three base-36 digits): one of a batch's jobs, in its shard. */
export function newJobIdIn(bucket: string): string {
  idCounter = (idCounter + 1) % 1_679_616;
  const now = Date.now();
  if (now !== idMs) {
    idMs = now;
    idTime = now.toString(36);
  }
  const random = Math.floor(Math.random() * 2_176_782_336)
    .toString(36)
    .padStart(6, '0');
  return `${idTime}${idCounter.toString(36).padStart(4, '0')}${random}.${bucket}`;
}

/** The submits of one queue (see {@link Queue.submit} and {@link Queue.submitBulk} for their contract). */
export class Submitter {
  /**
   * submit() calls wait for the promise jobs queued before them, not for a timer: they go
   * together when made in one go (a loop, or replies that arrived together), and fake timers in
   * a caller's tests cannot hold them back.
   */
  private readonly batchers: Batcher<PendingSubmit>[];
  /** Told of the jobs each write added (not those an existing id answered). */
  readonly onAdded = new Set<(jobs: readonly Job[]) => void>();

  constructor(
    private readonly shards: number,
    private readonly stores: readonly QueueStore[],
    private readonly reader: QueueReader,
    private readonly maxArgsBytes: number,
  ) {
    this.batchers = stores.map(
      (store) =>
        new Batcher<PendingSubmit>((items) => this.sendSubmits(store, items), {
          defer: (flush) => void Promise.resolve().then(flush),
          maxInFlight: SUBMITS_IN_FLIGHT,
        }),
    );
  }

  /** Validates a spec (throws {@link ValidationError} naming the field) and gives it an id. */
  check(spec: SubmitSpec, where = ''): CheckedSpec {
    const c = checkSpec(spec, this.maxArgsBytes, where);
    c.id ??= newJobId(c.group);
    return c;
  }

  /** Queues a checked spec to go with the other submit() calls of its shard's turn; resolves its job. */
  submit(checked: CheckedSpec): Promise<Job> {
    return new Promise<Job>((resolve, reject) => {
      this.batchers[shardOfGroup(checked.group, this.shards)].add({ spec: checked, resolve, reject });
    });
  }

  /** Sends the submit() calls still pending. */
  async drain(): Promise<void> {
    await Promise.all(this.batchers.map((b) => b.drain()));
  }

  /** Writes a checked bulk, each shard's part in calls of at most SUBMIT_CHUNK (see {@link Queue.submitBulk}); `many`: its errors name specs[i]. */
  async writeBulk(checked: CheckedSpec[], many: boolean): Promise<Job[]> {
    const out: Array<Job | undefined> = new Array(checked.length);
    const parts = byShard([...checked.keys()], this.shards, (i) => shardOfGroup(checked[i].group, this.shards));
    const ends = await Promise.allSettled(
      parts.map(async ([shard, positions]) => {
        for (const chunk of submitChunks(positions, (i) => checked[i])) {
          const r = await this.write(
            this.stores[shard],
            chunk.map((i) => checked[i]),
          );
          if (typeof r === 'number') throw reservedIdError(many ? `specs[${chunk[r]}].id` : 'id');
          chunk.forEach((i, k) => {
            out[i] = r[k];
          });
        }
      }),
    );
    const failed = ends.find((e) => e.status === 'rejected');
    if (!failed) return out as Job[];
    const written = out.filter((j) => j !== undefined);
    if (written.length === 0) throw failed.reason;
    throw new BulkSubmitError(written, failed.reason);
  }

  /** Sends submit() calls made together to one shard, in bulks of at most SUBMIT_CHUNK jobs or bytes of args. */
  private async sendSubmits(store: QueueStore, items: PendingSubmit[]): Promise<void> {
    await Promise.all(submitChunks(items, (item) => item.spec).map((c) => this.sendChunk(store, c)));
  }

  private async sendChunk(store: QueueStore, items: PendingSubmit[]): Promise<void> {
    let rest = items;
    while (rest.length > 0) {
      let out: Job[] | number;
      try {
        out = await this.write(
          store,
          rest.map((p) => p.spec),
        );
      } catch (err) {
        for (const p of rest) p.reject(err);
        return;
      }
      if (typeof out !== 'number') {
        const jobs = out;
        rest.forEach((p, k) => {
          p.resolve(jobs[k]);
        });
        return;
      }
      // Nothing was written: the submit whose id is reserved fails, the others go again.
      rest[out].reject(reservedIdError('id'));
      rest = rest.filter((_, k) => k !== out);
    }
  }

  /**
   * Writes checked specs of one shard in one script call: the jobs (an existing id answers the
   * job that has it), or, when an id is reserved for a staged periodic occurrence, its position,
   * with nothing written.
   */
  private async write(store: QueueStore, checked: CheckedSpec[]): Promise<Job[] | number> {
    const r: SubmitReply = await store.submit(checked, MAX_SUBMIT_BYTES);
    if (r.reserved !== undefined) return r.reserved;
    const submitted = r.submitted;
    // Ids that existed already, and the jobs that hold the dedup keys of those deduplicated, are
    // read back together (one round trip on the pipelined connection).
    const existing = new Map<number, Job>();
    const reads: Promise<void>[] = [];
    r.added.forEach((added, i) => {
      if (added) return;
      const holder = r.deduplicated?.get(i);
      reads.push(
        this.reader.readJob(store.keys.shard, holder?.id ?? checked[i].id!).then((job) => {
          if (!job) return;
          if (holder) job.deduplicated = holder.replaced ? 'replaced' : true;
          existing.set(i, job);
        }),
      );
    });
    await Promise.all(reads);
    const jobs = checked.map((c, i): Job => {
      const known = existing.get(i);
      if (known) return known;
      // (a holder gone before it was read back: the job as this submit described it, by its id)
      const holder = r.deduplicated?.get(i);
      return {
        ...submittedJob(c, submitted, holder?.id),
        ...(c.dedup && {
          dedupKey: c.dedup.key,
          dedupUntil: c.dedup.until,
          ...(c.dedup.ttl !== undefined && { dedupExpires: submitted + c.dedup.ttl }),
        }),
        ...(holder && { deduplicated: holder.replaced ? ('replaced' as const) : (true as const) }),
      };
    });
    if (this.onAdded.size > 0) {
      const added = jobs.filter((_, i) => r.added[i]);
      // (a listener's throw must not fail submits that were written)
      if (added.length > 0)
        for (const listener of this.onAdded) {
          try {
            listener(added);
          } catch {}
        }
    }
    return jobs;
  }
}

/** The job a submit of `c` added at `submitted` (ms), as submit.lua wrote it, with id `id` (default: its own). */
export function submittedJob(c: CheckedSpec, submitted: number, id = c.id!): Job {
  // (as submit.lua decides: a due time still to come makes the job delayed)
  const runAt = c.runAt ?? (c.delay !== undefined ? submitted + c.delay : undefined);
  return {
    id,
    task: c.task,
    group: c.group,
    args: c.args,
    priority: c.priority,
    subject: c.subject ?? '',
    submitter: c.submitter ?? '',
    state: runAt !== undefined && runAt > submitted ? 'delayed' : 'waiting',
    retries: 0,
    maxRetries: c.maxRetries,
    submitted,
    maxRuntime: c.maxRuntime,
    runAt,
  };
}
