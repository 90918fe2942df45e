/**
 * A job's attempts as getJob answers them: the run its hash holds (current or last) and the
 * earlier ones its attempts list keeps (written by the scripts, see lua/includes/attempts.lua).
 */
import { unpack } from 'msgpackr';
import type { Attempt, Job } from './job-codec.js';
import { ATTEMPTS_KEPT } from './wire.js';

/** Most attempts a job shows: its current or last run and the earlier ones kept (defined in ./wire.ts). */
export { ATTEMPTS_KEPT };

const OUTCOMES: ReadonlySet<string> = new Set(['running', 'success', 'failed', 'cancelled']);

/** The states in which the job's hash holds a run of its own (not one its attempts list has). */
const RUN_STATES: ReadonlySet<string> = new Set(['running', 'success', 'failed', 'cancelled']);

const time = (s: string): number | undefined => (s === '' ? undefined : Number(s));

/** The fields of an entry of an attempts list: a MessagePack array of strings { started, finished, executor, outcome, error, lease token }. */
function fieldsOf(entry: Buffer): string[] {
  const raw = unpack(entry) as unknown;
  return Array.isArray(raw) ? raw.map((v) => String(v ?? '')) : [];
}

/** One entry of an attempts list. */
export function decodeAttempt(entry: Buffer): Attempt {
  const [started, finished, executor, outcome, error] = fieldsOf(entry);
  const a: Attempt = { outcome: OUTCOMES.has(outcome) ? (outcome as Attempt['outcome']) : 'failed' };
  if (time(started ?? '') !== undefined) a.started = time(started);
  if (time(finished ?? '') !== undefined) a.finished = time(finished);
  if (executor) a.executor = executor;
  if (error) a.error = error;
  return a;
}

/**
 * Job `job`'s attempts, newest first: the run its hash holds, when it is one of its own (it ran,
 * and the list does not have it already), then the earlier ones of `entries` (its attempts list).
 */
export function attemptsOf(job: Job, entries: readonly Buffer[]): Attempt[] {
  const earlier = entries.map(decodeAttempt);
  const out: Attempt[] = [];
  // (the newest entry is the hash's run when their lease tokens are one: a job cancelled while it waited for its retry)
  const kept = entries.length > 0 && fieldsOf(entries[0])[5] === String(job.takeSeq);
  if (RUN_STATES.has(job.state) && job.started !== undefined && !kept) {
    const current: Attempt = { started: job.started, outcome: job.state as Attempt['outcome'] };
    if (job.state !== 'running' && job.finished !== undefined) current.finished = job.finished;
    if (job.worker) current.executor = job.worker;
    if (job.state === 'failed' && job.error) current.error = job.error;
    out.push(current);
  }
  for (const a of earlier) if (out.length < ATTEMPTS_KEPT) out.push(a);
  return out;
}
