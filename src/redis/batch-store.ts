/**
 * A batch's storage (docs/jobs.md#batches, lua/batch.lua, lua/includes/batches.lua): its producer
 * steps (open, add, close) as script calls on the batch's shard, and its reads (status, a page of
 * its jobs' ids), each a bounded read of the batch's own keys. Built on the shard's QueueStore
 * (its client, keys and script runner).
 */
import { packSubmits, type QueueStore, type SubmitJob } from './queue-store.js';
import { BATCH } from './wire.js';

/** What a batch's hash holds, decoded. */
export interface BatchRecord {
  id: string;
  description: string;
  /** Jobs added. */
  total: number;
  /** Jobs not ended yet. */
  pending: number;
  success: number;
  failed: number;
  cancelled: number;
  /** When it was opened, closed, completed (every job ended after its close) and succeeded (every job succeeded), ms. */
  opened: number;
  closed?: number;
  completed?: number;
  succeeded?: number;
}

/** Why an add was refused: the batch is gone, closed, completed, or the adding job does not run in it. */
export type BatchRefusal = 'gone' | 'closed' | 'completed' | 'stranger';

/** The answer of an add: per job whether it was added, a refusal, or (nothing written) the position of a job whose id is reserved. */
export type BatchAddReply =
  | { added: boolean[]; submitted: number; refused?: undefined; reserved?: undefined }
  | { refused: BatchRefusal; added?: undefined; reserved?: undefined }
  | { reserved: number; added?: undefined; refused?: undefined };

const REFUSALS: Record<string, BatchRefusal> = {
  [BATCH.gone]: 'gone',
  [BATCH.shut]: 'closed',
  [BATCH.over]: 'completed',
  [BATCH.stranger]: 'stranger',
};

const FIELDS = [
  BATCH.description,
  BATCH.total,
  BATCH.pending,
  BATCH.success,
  BATCH.failed,
  BATCH.cancelled,
  BATCH.opened,
  BATCH.closed,
  BATCH.completed,
  BATCH.succeeded,
] as const;

const count = (v: string | null) => (v === null ? 0 : Number(v));
const time = (v: string | null) => (v === null ? undefined : Number(v));

/** One shard's batch calls. */
export class BatchStore {
  constructor(readonly store: QueueStore) {}

  private call<T>(step: 'open' | 'add' | 'close', id: string, rest: Array<string | Buffer | number>): Promise<T> {
    const k = this.store.keys;
    return this.store.scripts.fcall<T>('batch', k.batch(id), [k.prefix, this.store.maxEvents, step, id, ...rest]);
  }

  /** Opens batch `id` with its callbacks (one-job submit lists, or none); false when it existed. */
  async open(
    id: string,
    onComplete: SubmitJob | undefined,
    onSuccess: SubmitJob | undefined,
    description: string,
  ): Promise<boolean> {
    const pack = (j: SubmitJob | undefined) => (j ? packSubmits([j], Infinity).packed : '');
    const [, written] = await this.call<[number, number]>('open', id, [pack(onComplete), pack(onSuccess), description]);
    return written === 1;
  }

  /**
   * Adds jobs (their descriptions naming the batch) to batch `id`: all of them or, refused, none.
   * `member`: the running job of the batch that adds them, and its lease token.
   */
  async add(id: string, jobs: readonly SubmitJob[], member?: { id: string; token: string }): Promise<BatchAddReply> {
    const { packed, width } = packSubmits(jobs, 512 * 1024 * 1024);
    const [submitted, answer, reserved] = await this.call<[number, number[] | string, number?]>('add', id, [
      width,
      packed,
      member?.id ?? '',
      member?.token ?? '',
    ]);
    if (typeof answer === 'string') return { refused: REFUSALS[answer] ?? 'gone' };
    if (reserved) return { reserved: reserved - 1 };
    return { submitted: Number(submitted), added: answer.map((a) => a === 1) };
  }

  /** Closes batch `id`: true when closed now, false when closed before, null when it is gone. */
  async close(id: string): Promise<boolean | null> {
    const [, answer] = await this.call<[number, number | string]>('close', id, []);
    if (typeof answer === 'string') return null;
    return answer === 1;
  }

  /** The batch's record, or null when there is none (never opened, or expired). */
  async read(id: string): Promise<BatchRecord | null> {
    await this.store.ready();
    const v = (await this.store.client.hmget(this.store.keys.batch(id), ...FIELDS)) as Array<string | null>;
    if (v[6] === null) return null;
    return {
      id,
      description: v[0] ?? '',
      total: count(v[1]),
      pending: count(v[2]),
      success: count(v[3]),
      failed: count(v[4]),
      cancelled: count(v[5]),
      opened: Number(v[6]),
      closed: time(v[7]),
      completed: time(v[8]),
      succeeded: time(v[9]),
    };
  }

  /** The ids of the batch's jobs `offset` to `offset + limit - 1`, in the order they were added. */
  async jobIds(id: string, offset: number, limit: number): Promise<string[]> {
    await this.store.ready();
    return this.store.client.lrange(this.store.keys.batchJobs(id), offset, offset + limit - 1);
  }
}
