/**
 * The writes an executor makes beside its script calls, each to one key and needing no atomicity
 * with anything else: a run's log lines (ctx.log), the staging of the children a run fans out
 * (ctx.fanOut, committed by the run's finish), and the deletion of a staging whose run will not
 * commit it. Log lines and deletions are batched into one pipeline per flush.
 */
import type { Redis } from 'ioredis';
import type { QueueKeys } from './keys.js';

/**
 * How long staged children wait for their run's finish (ms). A run that ends any other way has
 * them deleted (by its executor, or by the recovery of its lease); this only bounds what a lost
 * deletion leaves behind. A run that finishes after it fails and is retried.
 */
const STAGING_TTL_MS = 7 * 86_400_000;

/** A write sent with the others of its batch: a log line (the newest `maxLines` kept), or a staging's deletion. */
export type SideWrite =
  | { kind: 'log'; keys: QueueKeys; id: string; line: string; maxLines: number }
  | { kind: 'dropStaging'; keys: QueueKeys; id: string; token: string };

/** Sends `writes` in one pipeline. */
export async function sendSideWrites(client: Redis, writes: readonly SideWrite[]): Promise<void> {
  const pipe = client.pipeline();
  for (const w of writes) {
    if (w.kind === 'log') {
      const key = w.keys.logs(w.id);
      pipe.rpush(key, w.line);
      pipe.ltrim(key, -w.maxLines, -1);
    } else {
      pipe.del(w.keys.fanStaging(w.id, w.token));
    }
  }
  await pipe.exec();
}

/**
 * Writes the staging of the children that the run of job `id` under lease `token` fanned out
 * (their count, then their packed chunks), replacing any earlier one.
 */
export async function stageChildren(
  client: Redis,
  keys: QueueKeys,
  id: string,
  token: string,
  total: number,
  chunks: readonly Buffer[],
): Promise<void> {
  const key = keys.fanStaging(id, token);
  const pipe = client.pipeline();
  pipe.del(key);
  pipe.rpush(key, String(total));
  for (const c of chunks) pipe.rpush(key, c);
  pipe.pexpire(key, STAGING_TTL_MS);
  for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
}
