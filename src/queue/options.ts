/**
 * The options every part that opens a queue shares (producers, executors, schedulers): their
 * TSDoc, bounds and defaults, in one shape (see src/options.ts).
 */
import { z } from 'zod';
import { connection, HOUR_MS, MAX_EVENTS_CAP, MAX_PAYLOAD_LIMIT, type OptionsOf, whole } from '../options.js';
import { MAX_SHARDS } from '../redis/shards.js';

/** Largest packed args a queue accepts by default (QueueOptions.maxArgsBytes). */
export const DEFAULT_MAX_ARGS_BYTES = 512 * 1024;
/** The events stream's cap by default (QueueOptions.maxEvents). */
export const DEFAULT_MAX_EVENTS = 10_000;

/** Where a write must be before Rota acknowledges it: the primary, or a replica too. */
export const durability = z.enum(['primary', 'replicated'], { error: `must be 'primary' or 'replicated'` });

/** Options shared by every part that opens a queue. */
export const QUEUE_OPTIONS = {
  /** Where Redis is: a URL, ioredis options or an ioredis client. */
  connection,
  /** Largest packed args accepted, in bytes: 1 to 256 MiB; default 512 KiB. */
  maxArgsBytes: whole(1, MAX_PAYLOAD_LIMIT, 'bytes').default(DEFAULT_MAX_ARGS_BYTES),
  /**
   * Length the events stream is capped at (approximately), in entries: 0 (events off) to
   * 100,000,000; default 10,000.
   */
  maxEvents: whole(0, MAX_EVENTS_CAP).default(DEFAULT_MAX_EVENTS),
  /**
   * `'replicated'`: a submit resolves only once a replica has it (`WAIT 1`), and rejects with a
   * ReplicationError when none acknowledged it within `replicaTimeoutMs`; so no acknowledged
   * submit is lost when a replica takes over. Default `'primary'`: acknowledged by the primary.
   */
  durability: durability.default('primary'),
  /** How long a `'replicated'` write waits for a replica: 1 ms to an hour; default 1,000 ms. */
  replicaTimeoutMs: whole(1, HOUR_MS, 'ms').default(1000),
  /**
   * How many replicas a `'replicated'` write waits for (`WAIT n`): 1 to 100; default 1. With more replicas
   * than that, the one promoted may not be one that has the write: give the replica count.
   */
  replicaAcks: whole(1, 100).default(1),
  /**
   * Shards the queue spreads over (1 to 1,024; default 1): each is a queue of its own in its own Cluster slot,
   * a group lives in one of them (by a stable hash of its name), and executors take from them in
   * turn. Every part that opens the queue must give the count the queue has (a
   * ShardCountError otherwise); `rota reshard` changes it.
   */
  shards: whole(1, MAX_SHARDS).default(1),
};

/** Options shared by every part that opens a queue. */
export type QueueOptions = OptionsOf<typeof QUEUE_OPTIONS>;

/** Where a write must be before Rota acknowledges it: the primary, or a replica too. */
export type Durability = z.infer<typeof durability>;

/**
 * What a store waits for after its writes under `durability` (options checked by checkOptions):
 * the replica timeout (0: it does not wait for replicas) and how many replicas must acknowledge.
 */
export function replication(opts: { durability: Durability; replicaTimeoutMs: number; replicaAcks: number }): {
  replicaTimeoutMs: number;
  replicaAcks: number;
} {
  return { replicaTimeoutMs: opts.durability === 'replicated' ? opts.replicaTimeoutMs : 0, replicaAcks: opts.replicaAcks };
}
