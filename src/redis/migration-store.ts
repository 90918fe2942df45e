/**
 * A migration's storage contract (src/queue/migrate.ts), one per queue shard: the shard's schema
 * facts and a step's progress in its `meta` hash (META in ./wire.ts), bounded SCAN steps over its
 * job hashes on the node that holds the shard, and one batch of a step's script. It calls the
 * library directly, not through the schema check: a migration runs on data the check refuses.
 */
import type { Cluster, Redis } from 'ioredis';
import { UnexpectedReplyError } from '../errors.js';
import { type QueueKeys, queueKeys } from './keys.js';
import { rotaLibrary, runFunction } from './library.js';
import { slotPrimary } from './script-runner.js';
import { packStrings } from './string-array.js';
import { META, MIGRATE_BATCH } from './wire.js';

/** Largest MessagePack id list one batch sends (bytes). */
const BATCH_BYTES = 64 * 1024 * 1024;

/** A shard's schema facts and the step under way, as its `meta` hash records them (null: absent). */
export interface MigrationState {
  schema: string | null;
  compat: string | null;
  step: string | null;
  cursor: string | null;
  done: number;
}

/** One SCAN step over the shard's job hashes: where to go on from ('0': the end), and the job ids read. */
export interface ScanStep {
  cursor: string;
  ids: string[];
}

/** What one batch of a step answered (see lua/migrate-job-field.lua). */
export type BatchReply =
  | { status: 'ok'; done: number; complete: boolean }
  | { status: 'stale'; schema: string; step: string }
  | { status: 'moved'; cursor: string };

/** A batch of a job-field step: the field read, the field written, and whether the read one goes. */
export interface JobFieldBatch {
  fromSchema: number;
  toSchema: number;
  compat: number;
  cursor: string;
  next: string;
  ids: string[];
  read: string;
  write: string;
  move: boolean;
}

/** The migration reads and writes of one queue shard. */
export class MigrationStore {
  readonly keys: QueueKeys;
  private node?: Redis;

  constructor(
    private readonly client: Redis | Cluster,
    readonly queue: string,
    readonly shard = 0,
    shards = 1,
  ) {
    this.keys = queueKeys(queue, shard, shards);
  }

  /** The shard's schema facts and step under way. */
  async state(): Promise<MigrationState> {
    const [schema, compat, step, cursor, done] = await this.client.hmget(
      this.keys.meta,
      META.schema,
      META.compat,
      META.step,
      META.cursor,
      META.done,
    );
    return { schema, compat, step, cursor, done: Number(done ?? 0) };
  }

  /**
   * One SCAN step of about `count` keys over the shard's job hashes (`<prefix>j:*`) from
   * `cursor`, on the node that holds the shard: a call of O(count).
   */
  async scanJobs(cursor: string, count: number): Promise<ScanStep> {
    const node = await this.shardNode();
    const head = this.keys.job('');
    const [next, keys] = await node.scan(cursor, 'MATCH', `${head}*`, 'COUNT', count);
    return { cursor: next, ids: keys.map((k) => k.slice(head.length)) };
  }

  /** Runs one batch of a job-field step (lua/migrate-job-field.lua): one atomic call. */
  async jobFieldBatch(b: JobFieldBatch): Promise<BatchReply> {
    const reply = await runFunction<Array<string | number>>(
      await this.shardNode(),
      rotaLibrary(),
      'migrate-job-field',
      [this.keys.meta],
      [
        this.keys.prefix,
        b.fromSchema,
        b.toSchema,
        b.compat,
        b.cursor,
        b.next,
        packStrings(b.ids, BATCH_BYTES, 'ids'),
        b.read,
        b.write,
        b.move ? 'move' : 'copy',
      ],
    );
    const [status, a, c] = reply;
    if (status === MIGRATE_BATCH.ok) return { status: 'ok', done: Number(a), complete: Number(c) === 1 };
    if (status === MIGRATE_BATCH.stale) return { status: 'stale', schema: String(a), step: String(c) };
    if (status === MIGRATE_BATCH.moved) return { status: 'moved', cursor: String(a) };
    throw new UnexpectedReplyError(`migrate-job-field answered ${JSON.stringify(reply)}`);
  }

  /**
   * The connection to the node that holds the shard: the client itself, or in a Cluster the
   * primary of the shard's slot (SCAN names no key).
   */
  private async shardNode(): Promise<Redis> {
    if (this.node) return this.node;
    const cluster = this.client as Cluster;
    if (typeof cluster.nodes !== 'function') {
      this.node = this.client as Redis;
      return this.node;
    }
    const node = slotPrimary(cluster, Number(await cluster.call('CLUSTER', 'KEYSLOT', this.keys.meta)), this.queue);
    this.node = node;
    return node;
  }
}
