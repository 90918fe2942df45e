/**
 * The schema check: the first client to use a queue shard records the data format's version in
 * the shard's `meta` hash, and the queue's shard count in the unsharded queue's `meta` hash (the
 * queue's layout); a client of another version, or configured with another count, refuses the
 * queue before its first script call.
 */
import type { Redis } from 'ioredis';
import { SchemaMismatchError, ShardCountError } from '../errors.js';
import { asConnectionError } from './connection.js';
import { SCHEMA_VERSION } from './wire.js';

/** One client's check of one queue's schema, made once, before its first script call. */
export class SchemaGate {
  /** True once the queue is known to hold this schema. */
  passed = false;
  private pending: Promise<void> | null = null;

  /**
   * @param layoutKey the unsharded queue's `meta` hash, which records the queue's shard count
   * @param shards the shard count this client is configured with
   */
  constructor(
    private readonly client: Redis,
    private readonly metaKey: string,
    private readonly queue: string,
    private readonly layoutKey = metaKey,
    private readonly shards = 1,
  ) {}

  /**
   * Reads the queue's schema, recording this one when it has none (HSETNX): rejects with
   * a {@link SchemaMismatchError} when that is another. A failed read (Redis unreachable) is
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
    const schema = await this.readOrRecord(this.metaKey, 'schema', SCHEMA_VERSION);
    if (schema !== String(SCHEMA_VERSION)) throw new SchemaMismatchError(this.queue, String(schema), SCHEMA_VERSION);
    const shards = await this.readOrRecord(this.layoutKey, 'shards', this.shards);
    if (shards !== String(this.shards)) throw new ShardCountError(this.queue, Number(shards), this.shards);
  }

  /** Field `field` of hash `key`, recorded as `value` first when it has none (HSETNX). */
  private async readOrRecord(key: string, field: string, value: number): Promise<string | null> {
    const found = await this.client.hget(key, field);
    if (found !== null) return found;
    await this.client.hsetnx(key, field, String(value));
    return this.client.hget(key, field);
  }
}
