/**
 * Reading a queue shard's events stream (`events`, written by the scripts: one entry per script
 * call). The entries' fields are decoded by src/queue/events.ts.
 */
import { type ConnectionOption, connect } from './connection.js';

/** Most entries one read asks for. */
const READ_COUNT = 100;
/** How long one read blocks for new entries, ms (then it reads again, unless aborted). */
const BLOCK_MS = 1000;

/**
 * The entries of stream `key` after `from` (default `$`: only new ones), each as its id and its
 * flat field list, until `signal` aborts; on a connection of its own (a blocking read), closed
 * when the iteration ends.
 */
export async function* streamEntries(
  connection: ConnectionOption,
  key: string,
  opts: { from?: string; signal?: AbortSignal },
): AsyncGenerator<[string, string[]]> {
  const { client } = connect(connection, { blocking: true });
  let last = opts.from ?? '$';
  const onAbort = () => client.disconnect();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    while (!opts.signal?.aborted) {
      let reply: [string, [string, string[]][]][] | null;
      try {
        reply = (await client.xread('COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', key, last)) as typeof reply;
      } catch (err) {
        if (opts.signal?.aborted) return;
        throw err;
      }
      if (!reply) continue;
      for (const [, entries] of reply) {
        for (const [id, fields] of entries) {
          last = id;
          yield [id, fields];
        }
      }
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    client.disconnect();
  }
}
