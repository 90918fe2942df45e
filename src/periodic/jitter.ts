/**
 * Jitter: each occurrence of a task is due a little after it, by an offset fixed by the task id
 * and the occurrence alone (a hash), so that every replica computes the same due time and an
 * occurrence stays one job whichever replica stages it.
 */
import { createHash } from 'node:crypto';

/**
 * The offset (ms) in `[0, jitter)` of occurrence `occurrence` (ms) of task `id`: the first six
 * bytes of SHA-256(`<id>@<occurrence>`) modulo `jitter`. 0 when `jitter` is 0 or absent.
 */
export function jitterOffset(id: string, occurrence: number, jitter: number | undefined): number {
  if (!jitter || jitter <= 1) return 0;
  const digest = createHash('sha256').update(`${id}@${occurrence}`).digest();
  return digest.readUIntBE(0, 6) % jitter;
}

/** When occurrence `occurrence` of task `id` is due: the occurrence plus its jitter offset. */
export function dueOf(id: string, occurrence: number, jitter: number | undefined): number {
  return occurrence + jitterOffset(id, occurrence, jitter);
}
