/**
 * The schema check: the first client to use a queue records the data format's version in the
 * queue's `meta` hash; a client of another version refuses the queue before its first script call.
 */
import type { Redis } from 'ioredis';
import { SchemaMismatchError } from '../errors.js';
import { asConnectionError } from './connection.js';
import { SCHEMA_VERSION } from './wire.js';

/** One client's check of one queue's schema, made once, before its first script call. */
export class SchemaGate {
  /** True once the queue is known to hold this schema. */
  passed = false;
  private pending: Promise<void> | null = null;

  constructor(
    private readonly client: Redis,
    private readonly metaKey: string,
    private readonly queue: string,
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
    // A read first: a queue that has its schema needs no write, so the check passes while Redis
    // refuses writes (maxmemory reached, a read-only replica).
    let found = await this.client.hget(this.metaKey, 'schema');
    if (found === null) {
      await this.client.hsetnx(this.metaKey, 'schema', String(SCHEMA_VERSION));
      found = await this.client.hget(this.metaKey, 'schema');
    }
    if (found !== String(SCHEMA_VERSION)) throw new SchemaMismatchError(this.queue, String(found), SCHEMA_VERSION);
  }
}
