/** Redis connections: a URL, ioredis options or a ready ioredis instance. */
import { Redis, type RedisOptions, type Cluster } from 'ioredis';

/** How to reach Redis: a `redis://` URL, ioredis options, or an ioredis client (Redis or Cluster). */
export type ConnectionOption = string | RedisOptions | Redis | Cluster;

/** A client and whether Rota created it (and so must close it). */
export interface OwnedClient {
  client: Redis;
  owned: boolean;
}

function isClient(c: ConnectionOption): c is Redis | Cluster {
  return typeof c === 'object' && c !== null && typeof (c as Redis).duplicate === 'function';
}

/**
 * Opens a client. `blocking` clients (workers' wait for work, schedulers) retry every command
 * through outages instead of failing it, so they resume by themselves when Redis returns.
 * `subscriber` clients (SUBSCRIBE only) skip the ready check.
 */
export function connect(conn: ConnectionOption, opts: { blocking?: boolean; reuse?: boolean; subscriber?: boolean } = {}): OwnedClient {
  const extra: RedisOptions = opts.blocking ? { maxRetriesPerRequest: null, enableReadyCheck: true } : {};
  // A subscriber's ready check (INFO) can race its resubscription after a reconnect and be refused
  // in subscriber mode, looping reconnects (ioredis issues #2037, #2099): no ready check for it.
  if (opts.subscriber) extra.enableReadyCheck = false;
  const retry: RedisOptions = { retryStrategy: (times) => Math.min(50 * times, 1000) };
  if (isClient(conn) && opts.reuse) return { client: conn as Redis, owned: false };
  let client: Redis;
  if (isClient(conn)) client = (conn as Redis).duplicate({ ...extra });
  else if (typeof conn === 'string') client = new Redis(conn, { ...retry, ...extra });
  else client = new Redis({ ...retry, ...conn, ...extra });
  // Connection errors show up as failed commands (or as the executor's error events); without a
  // listener ioredis would print every failed reconnect attempt during an outage.
  client.on('error', () => {});
  return { client, owned: true };
}
