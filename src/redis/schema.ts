/**
 * The schema check: the first client to use a queue shard records the data format's version in
 * the shard's `meta` hash, and the queue's shard count in the unsharded queue's `meta` hash (the
 * queue's layout); a client of another version, or configured with another count, refuses the
 * queue before its first script call, and so does every client while the queue's shard count is
 * being changed (`reshard` in the layout, see src/queue/reshard.ts). Which recorded schemas a
 * build reads is the version rule of docs/upgrading.md ({@link checkSchema}).
 */
import type { Cluster, Redis } from 'ioredis';
import { ReshardInProgressError, SchemaMismatchError, ShardCountError } from '../errors.js';
import { asConnectionError } from './connection.js';
import { queueKeys } from './keys.js';
import { META, SCHEMA_READS_FROM, SCHEMA_VERSION } from './wire.js';

/**
 * The fields of the queue's layout (the unsharded queue's `meta` hash): its shard count, and while
 * a reshard is under way the count it goes to and the step it is at (src/queue/reshard.ts).
 */
export const LAYOUT = { shards: 'shards', reshard: 'reshard', reshardStep: 'reshardStep' } as const;

/**
 * Throws when a queue's layout (see {@link Layout}) does not let a client configured with
 * `shards` read it whole: while a reshard is under way or was killed some of its jobs are in the
 * other layout, and under another count shards would be missed. A queue that records no count
 * yet passes.
 * @throws {ReshardInProgressError} while the queue's shard count is being changed.
 * @throws {ShardCountError} when the queue records another shard count.
 */
export function checkLayout(queue: string, shards: number, layout: Pick<Layout, 'shards' | 'reshard'>): void {
  if (layout.reshard !== null) throw new ReshardInProgressError(queue, layout.shards ?? 1, layout.reshard);
  if (layout.shards !== null && layout.shards !== shards) throw new ShardCountError(queue, layout.shards, shards);
}

/**
 * Checks that queue `queue`, read by a client configured with `shards`, can be read whole (see
 * {@link checkLayout}): one read of its layout, made before each read of the queue (not kept: a
 * reshard may begin after the first), which records nothing.
 */
export async function checkReadLayout(client: Redis, queue: string, shards: number): Promise<void> {
  checkLayout(queue, shards, await readLayout(client, queueKeys(queue).meta));
}

/** The queue's layout as recorded: its shard count (null: none recorded), and the count and step of a reshard under way (null: none). */
export interface Layout {
  shards: number | null;
  reshard: number | null;
  reshardStep: string | null;
}

/** Reads the queue's layout from `layoutKey`, the unsharded queue's `meta` hash (read only). */
export async function readLayout(client: Redis | Cluster, layoutKey: string): Promise<Layout> {
  const [shards, reshard, reshardStep] = await client.hmget(layoutKey, LAYOUT.shards, LAYOUT.reshard, LAYOUT.reshardStep);
  return { shards: shards === null ? null : Number(shards), reshard: reshard === null ? null : Number(reshard), reshardStep };
}

/** Reads queue `queue`'s layout (read only). */
export function readLayoutOf(client: Redis | Cluster, queue: string): Promise<Layout> {
  return readLayout(client, queueKeys(queue).meta);
}

/** The shard count queue `queue`'s layout records, as recorded (null when none is). */
export function readShardCount(client: Redis | Cluster, queue: string): Promise<string | null> {
  return client.hget(queueKeys(queue).meta, LAYOUT.shards);
}

/** The schema facts of a shard's `meta` hash (null: not recorded). */
export interface RecordedSchema {
  schema: string | null;
  compat: string | null;
}

/**
 * Throws unless this build reads data of schema `schema` whose oldest reader is `compat` (absent:
 * the schema itself): the schema must be at least {@link SCHEMA_READS_FROM} (else the data needs
 * `rota migrate`), and `compat` at most {@link SCHEMA_VERSION} (else a newer build wrote what this
 * one cannot read). A shard that records none passes.
 * @throws {SchemaMismatchError} naming what to run.
 */
export function checkSchema(queue: string, recorded: RecordedSchema): void {
  if (recorded.schema === null) return;
  const schema = Number(recorded.schema);
  const compat = recorded.compat === null ? schema : Number(recorded.compat);
  if (!Number.isInteger(schema) || !Number.isInteger(compat)) {
    throw new SchemaMismatchError(queue, recorded.schema, SCHEMA_VERSION);
  }
  if (schema < SCHEMA_READS_FROM) throw new SchemaMismatchError(queue, recorded.schema, SCHEMA_VERSION, 'migrate');
  if (compat > SCHEMA_VERSION) throw new SchemaMismatchError(queue, recorded.schema, SCHEMA_VERSION, 'upgrade', compat);
}

/** Reads the schema facts of the shard whose `meta` hash is `metaKey` (read only). */
export async function readSchema(client: Redis, metaKey: string): Promise<RecordedSchema> {
  const [schema, compat] = await client.hmget(metaKey, META.schema, META.compat);
  return { schema, compat };
}

/** One client's check of one queue's schema, made once, before its first script call. */
export class SchemaGate {
  /** True once the queue is known to hold this schema. */
  passed = false;
  private pending: Promise<void> | null = null;

  /**
   * @param layoutKey the unsharded queue's `meta` hash, which records the queue's shard count
   * @param shards the shard count this client is configured with
   * @param resharding a reshard's own client: the layout is not checked
   */
  constructor(
    private readonly client: Redis,
    private readonly metaKey: string,
    private readonly queue: string,
    private readonly layoutKey = metaKey,
    private readonly shards = 1,
    private readonly resharding = false,
  ) {}

  /**
   * Reads the queue's schema, recording this one when it has none (HSETNX): rejects with
   * a {@link SchemaMismatchError} when this build cannot read it ({@link checkSchema}). A failed read (Redis unreachable) is
   * tried again by the next call; a mismatch is answered to every call.
   */
  check(): Promise<void> {
    this.pending ??= this.read().then(
      () => {
        this.passed = true;
      },
      (err: unknown) => {
        if (!(err instanceof SchemaMismatchError)) this.pending = null;
        throw err;
      },
    );
    return this.pending;
  }

  private async read(): Promise<void> {
    try {
      await this.readOnce();
    } catch (err) {
      // the first contact with Redis: a failure to reach it says where and why
      throw asConnectionError(this.client, err);
    }
  }

  private async readOnce(): Promise<void> {
    // Reads first: a queue that has its schema and count needs no write, so the check passes
    // while Redis refuses writes (maxmemory reached, a read-only replica).
    let recorded = await readSchema(this.client, this.metaKey);
    if (recorded.schema === null) {
      await this.record(this.metaKey, META.schema, SCHEMA_VERSION);
      recorded = await readSchema(this.client, this.metaKey);
    }
    checkSchema(this.queue, recorded);
    if (this.resharding) return;
    const [found, to] = await this.client.hmget(this.layoutKey, LAYOUT.shards, LAYOUT.reshard);
    const shards = found ?? (await this.record(this.layoutKey, LAYOUT.shards, this.shards));
    checkLayout(this.queue, this.shards, { shards: Number(shards), reshard: to === null ? null : Number(to) });
  }

  /** Field `field` of hash `key` after recording it as `value` unless it has one (HSETNX). */
  private async record(key: string, field: string, value: number): Promise<string | null> {
    await this.client.hsetnx(key, field, String(value));
    return this.client.hget(key, field);
  }
}
