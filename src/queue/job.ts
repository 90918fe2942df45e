/** The job record: its fields, states, and how it is read back from Redis. */
import { unpack } from 'msgpackr';

/** Where a job is in its life. Final states: success, failed, cancelled. */
export type JobState = 'waiting' | 'scheduled' | 'running' | 'success' | 'stuck' | 'failed' | 'cancelled';

/** Every state, in lifecycle order. */
export const JOB_STATES: readonly JobState[] = ['waiting', 'scheduled', 'running', 'stuck', 'success', 'failed', 'cancelled'];

/** States a job never leaves. */
export const FINAL_STATES: ReadonlySet<JobState> = new Set(['success', 'failed', 'cancelled']);

export type Priority = 'high' | 'low';

/** A job as stored in Redis. Times are milliseconds since the epoch (Redis server clock). */
export interface Job<A = unknown, R = unknown> {
  id: string;
  /** Name of the handler that runs it. */
  task: string;
  /** Tenant; fairness is round-robin across groups. */
  group: string;
  args: A;
  priority: Priority;
  subject: string;
  submitter: string;
  state: JobState;
  /** Failed attempts so far (each made the job stuck and retried). */
  retries: number;
  maxRetries: number;
  /** Id of the executor that took it last. */
  worker?: string;
  submitted: number;
  /** When its current or last run started. */
  started?: number;
  finished?: number;
  /** When a stuck job may run again. */
  due?: number;
  /** The order in which the queue handed jobs out (also the lease token of the run). */
  takeSeq?: number;
  /** Run time limit in ms, after which its signal aborts. */
  maxRuntime?: number;
  /** Id of the periodic task that submitted it. */
  tracker?: string;
  /** Planned time of the periodic occurrence it runs. */
  occurrence?: number;
  progress?: number;
  result?: R;
  /** The last error (message and stack) of a failed or stuck run. */
  error?: string;
  /** Set when cancellation of a running job was requested. */
  cancelRequested?: boolean;
}

const NUMBER_FIELDS = new Set(['retries', 'maxRetries', 'submitted', 'started', 'finished', 'due', 'takeSeq', 'maxRuntime', 'occurrence', 'progress', 'taken']);

/** Builds a job from an HGETALL reply given as a flat [field, value, ...] list of Buffers. */
export function decodeJob(flat: Buffer[]): Job {
  const job: Record<string, unknown> = { retries: 0, subject: '', submitter: '' };
  for (let i = 0; i < flat.length; i += 2) {
    const field = flat[i].toString();
    const raw = flat[i + 1];
    if (field === 'args' || field === 'result') {
      if (raw.length > 0) job[field] = unpack(raw);
      continue;
    }
    const value = raw.toString();
    if (value === '') continue;
    if (NUMBER_FIELDS.has(field)) job[field] = Number(value);
    else if (field === 'cancel') job.cancelRequested = value === '1';
    else job[field] = value;
  }
  delete job.taken;
  return job as unknown as Job;
}

/** Builds a job from an HGETALL reply given as an object of Buffers. */
export function decodeJobObject(obj: Record<string, Buffer>): Job | null {
  const flat: Buffer[] = [];
  for (const [k, v] of Object.entries(obj)) flat.push(Buffer.from(k), v);
  return flat.length ? decodeJob(flat) : null;
}
