/**
 * The writes an executor makes beside its script calls, each to one key and needing no atomicity
 * with anything else: a run's log lines (ctx.log), the staging of the children a run fans out
 * (ctx.fanOut, committed by the run's finish), and the deletion of a staging whose run will not
 * commit it. Log lines and deletions are batched: one pipeline per shard per flush, since a
 * Redis Cluster refuses a pipeline whose keys are in the slots of several nodes.
 */
import type { Redis } from 'ioredis';
import type { QueueKeys } from './keys.js';
import { execChecked } from './pipeline.js';

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

/**
 * Sends `writes`, all of one shard (their `keys`), in one pipeline; answers those Redis refused
 * (a command of theirs answered an error: the others were applied), with the first refusal.
 */
export async function sendSideWrites(
  client: Redis,
  writes: readonly SideWrite[],
): Promise<{ refused: SideWrite[]; err?: Error }> {
  const pipe = client.pipeline();
  // (the write each command is of)
  const of: number[] = [];
  writes.forEach((w, i) => {
    if (w.kind === 'log') {
      const key = w.keys.logs(w.id);
      pipe.rpush(key, w.line);
      pipe.ltrim(key, -w.maxLines, -1);
      of.push(i, i);
    } else {
      pipe.del(w.keys.fanStaging(w.id, w.token));
      of.push(i);
    }
  });
  const refused = new Set<number>();
  let first: Error | undefined;
  await execChecked(pipe, (command, err) => {
    first ??= err;
    refused.add(of[command]);
  });
  return { refused: [...refused].map((i) => writes[i]), err: first };
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
  total: number | string,
  chunks: readonly Buffer[],
): Promise<void> {
  const key = keys.fanStaging(id, token);
  const pipe = client.pipeline();
  pipe.del(key);
  pipe.rpush(key, String(total));
  for (const c of chunks) pipe.rpush(key, c);
  pipe.pexpire(key, STAGING_TTL_MS);
  await execChecked(pipe);
}
