/** Reads the queue's events stream: one entry per script call, holding every state change it made. */
import { connect, type ConnectionOption } from '../redis/connection.js';
import type { JobState } from './job.js';

/** One job's change of state. */
export interface QueueEvent {
  /** Id of the stream entry it came in; pass it as `from` to resume after it. */
  streamId: string;
  /** The job's id. */
  id: string;
  /** The state the job entered. */
  state: JobState;
  /** The error, for `stuck` and `failed`. */
  error?: string;
}

/** Parses one stream entry's fields into events. */
export function parseEntry(streamId: string, fields: string[]): QueueEvent[] {
  const out: QueueEvent[] = [];
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] !== 'b') continue;
    for (const [id, state, err] of JSON.parse(fields[i + 1]) as Array<[string, JobState, string | false]>) {
      out.push(err ? { streamId, id, state, error: err } : { streamId, id, state });
    }
  }
  return out;
}

/** Async iterator over events after `from` (default: only new ones), until `signal` aborts. */
export async function* readEvents(
  connection: ConnectionOption,
  key: string,
  opts: { from?: string; signal?: AbortSignal },
): AsyncGenerator<QueueEvent> {
  const { client } = connect(connection, { blocking: true });
  let last = opts.from ?? '$';
  const onAbort = () => client.disconnect();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    while (!opts.signal?.aborted) {
      let reply: [string, [string, string[]][]][] | null;
      try {
        reply = (await client.xread('COUNT', 100, 'BLOCK', 1000, 'STREAMS', key, last)) as typeof reply;
      } catch (err) {
        if (opts.signal?.aborted) return;
        throw err;
      }
      if (!reply) continue;
      for (const [, entries] of reply) {
        for (const [id, fields] of entries) {
          last = id;
          yield* parseEntry(id, fields);
        }
      }
    }
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    client.disconnect();
  }
}
