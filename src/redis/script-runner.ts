/**
 * How every store of a queue shard runs its scripts: the schema check before the first call
 * ({@link SchemaGate}), the call itself (`FCALL` of Rota's function library, ./library.ts), and,
 * for writes that must reach a replica (durability `replicated`), the `WAIT` after it. The stores
 * (./queue-store.ts and the stores built on it) hold each script's arguments and reply format;
 * this class holds what is the same for all of them.
 */
import type { Cluster, Redis } from 'ioredis';
import { ConnectionError, RedisFullError, ReplicationError } from '../errors.js';
import { type Arg, type Library, rotaLibrary, runFunction } from './library.js';
import { SchemaGate } from './schema.js';

/** The error Redis answers a write with while its memory is full (maxmemory reached, noeviction). */
const OOM = /^OOM |\bOOM command not allowed/;

/**
 * A Redis reply error as the Rota error it means, for a command `command` of queue `queue`: a
 * write refused for memory (OOM) is a {@link RedisFullError}; any other error is given back as
 * it is. The one mapping of Redis's refusals, for every store's calls.
 */
export function typedReplyError(err: unknown, queue: string, command: string): unknown {
  if (err instanceof Error && OOM.test(err.message)) {
    return new RedisFullError(queue, command, err.message.slice(0, 200));
  }
  return err;
}

/** Options of a {@link ScriptRunner}. */
export interface ScriptRunnerOptions {
  /** The function library to call; default Rota's own (tests pass another build). */
  library?: Library;
  /** With a value above 0, {@link ScriptRunner.replicated} waits up to this many ms for replicas. */
  replicaTimeoutMs?: number;
  /** Replicas that must acknowledge, with a replica timeout (`WAIT n`); default 1. */
  replicaAcks?: number;
  /** The shard count the client is configured with, checked against the queue's layout (default 1). */
  shards?: number;
  /** A reshard's own runner: the schema is checked, the layout is not. */
  resharding?: boolean;
}

/**
 * The script calls of one queue shard on one client.
 * @example
 * ```ts
 * const k = queueKeys('mail');
 * const runner = new ScriptRunner(client, 'mail', k.meta, k.meta, {});
 * const running = await runner.fcall<Array<string | number>>('running', k.leases, [k.prefix]);
 * ```
 */
export class ScriptRunner {
  private readonly gate: SchemaGate;
  private readonly lib: Library;
  private readonly replicaTimeoutMs: number;
  private readonly replicaAcks: number;
  /** The shard's Cluster slot, once asked for. */
  private slot?: number;

  /**
   * @param metaKey the shard's `meta` hash (its schema; its Cluster slot is the shard's)
   * @param layoutKey the unsharded queue's `meta` hash (the queue's shard count)
   */
  constructor(
    readonly client: Redis,
    readonly queue: string,
    private readonly metaKey: string,
    layoutKey: string,
    opts: ScriptRunnerOptions,
  ) {
    this.gate = new SchemaGate(client, metaKey, queue, layoutKey, opts.shards ?? 1, opts.resharding);
    this.lib = opts.library ?? rotaLibrary();
    this.replicaTimeoutMs = opts.replicaTimeoutMs ?? 0;
    this.replicaAcks = opts.replicaAcks ?? 1;
  }

  /** Checks the queue's schema, once (see {@link SchemaGate}); later calls resolve at once. */
  async ready(): Promise<void> {
    if (!this.gate.passed) await this.gate.check();
  }

  /**
   * Calls `script` with its one key and `args`, after the schema check; Buffers in the reply when
   * `buffers`. A call Redis refuses for memory rejects with a {@link RedisFullError}.
   */
  async fcall<T>(script: string, key: string, args: Arg[], buffers = false): Promise<T> {
    try {
      if (!this.gate.passed) await this.gate.check();
      // (a replicated write's WAIT checks the connection of the shard's primary: its slot known before)
      if (this.replicaTimeoutMs > 0 && this.slot === undefined && isCluster(this.client)) await this.slotOf();
      return await runFunction<T>(this.client, this.lib, script, [key], args, buffers);
    } catch (err) {
      throw typedReplyError(err, this.queue, `FCALL ${script}`);
    }
  }

  /**
   * With a replica timeout: waits until `replicaAcks` replicas have what this connection wrote so
   * far (`WAIT`, sent to the primary that holds the shard), or rejects with a
   * {@link ReplicationError}. Without one, resolves at once. Call it as soon as the write's
   * {@link fcall} resolves, with no await between: the connection then is the write's, and a WAIT
   * on any other (made again meanwhile) counts nothing of the write, so that rejects too.
   */
  async replicated(): Promise<void> {
    if (this.replicaTimeoutMs <= 0) return;
    if (this.slot === undefined && isCluster(this.client)) await this.slotOf();
    const primary = this.primary();
    const epoch = connectionEpoch(primary);
    const acked = Number(await primary.call('WAIT', String(this.replicaAcks), String(this.replicaTimeoutMs)));
    const same = () => {
      try {
        return this.primary() === primary && connectionEpoch(primary) === epoch;
      } catch {
        return false; // (no primary known for the slot now: a failover)
      }
    };
    if (!same()) throw new ReplicationError(this.queue, this.replicaTimeoutMs, this.replicaAcks, 0, true);
    if (acked < this.replicaAcks) throw new ReplicationError(this.queue, this.replicaTimeoutMs, this.replicaAcks, acked);
  }

  /** The shard's Cluster slot, asked for once. */
  private async slotOf(): Promise<number> {
    this.slot ??= Number(await this.client.call('CLUSTER', 'KEYSLOT', this.metaKey));
    return this.slot;
  }

  /**
   * The connection to the primary that holds the shard: the client itself, or in a Cluster the
   * primary of the shard's slot (WAIT names no key, so a Cluster would send it to any node; the
   * slot is known once a write was sent).
   * @throws {ConnectionError} while a Cluster knows no primary for the slot.
   */
  private primary(): Redis {
    const cluster = this.client as unknown as Cluster;
    if (!isCluster(this.client)) return this.client;
    return slotPrimary(cluster, this.slot ?? -1, this.queue);
  }
}

/** Whether `client` is a Cluster client. */
function isCluster(client: Redis | Cluster): boolean {
  return typeof (client as Cluster).nodes === 'function';
}

/** How many times `client` has connected (ioredis counts each connection it makes). */
function connectionEpoch(client: Redis): number {
  return (client as unknown as { connectionEpoch: number }).connectionEpoch;
}

/**
 * The primary of Cluster slot `slot`, which holds a shard of queue `queue` (for the commands that
 * name no key: WAIT, SCAN).
 * @throws {ConnectionError} while no primary is known for the slot.
 */
export function slotPrimary(cluster: Cluster, slot: number, queue: string): Redis {
  const [nodeKey] = cluster.slots[slot] ?? [];
  const node = cluster.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  if (!node) {
    throw new ConnectionError(
      `the primary of queue "${queue}"`,
      'NOPRIMARY',
      'no primary is known for its slot yet (the Cluster is failing over or moving the slot); try again',
    );
  }
  return node;
}
