/**
 * The queue scripts' own encodings: the job list a submit carries, the runs a finish carries, and
 * the jobs and end states their replies hold (field orders and codes from ./wire.ts). Used by
 * ./queue-store.ts, and by the callers that build a submit or a finish batch.
 */
import { assignDescription, type Job, type JobDescription, type JobState, type Priority, packDescription } from './job-codec.js';
import { packStrings, type StringValue } from './string-array.js';
import {
  DEDUP_UNTIL,
  DELAY_MARK,
  END_CODES,
  END_REFUSED,
  FAILURE_POLICY,
  FLOW_CHUNK_MARK,
  type OutcomeCode,
  SUBMIT_FIELDS,
  SUBMIT_WIDTH,
  TAKEN_WIDTH,
  UNSTARTED_PREFIX,
} from './wire.js';

/**
 * A job to submit: its description and packed args, id, and due time when it has one. No periodic
 * origin: a periodic task's runs are staged by periodic-stage.lua, never submitted.
 */
export interface SubmitJob extends Omit<JobDescription, 'tracker' | 'occurrence'> {
  id?: string;
  priority: Priority;
  /** The args as MessagePack, empty when it has none. */
  packedArgs: Buffer;
  /** Run no earlier than this (ms since the epoch, by the Redis server's clock). */
  runAt?: number;
  /** Run no earlier than this many ms after the submit (by the Redis server's clock). */
  delay?: number;
  /** The trace context (traceparent) of the submit's span, when a tracer made one. */
  trace?: string;
  /** Its deduplication (see lua/includes/dedup); its key goes in the description too (`dedupKey`). */
  dedup?: SubmitDedup;
}

/** A submitted job's deduplication, as submit.lua gets it (checked: src/queue/validate.ts). */
export interface SubmitDedup {
  key: string;
  until: keyof typeof DEDUP_UNTIL;
  ttl?: number;
  replace?: boolean;
  extend?: boolean;
}

/**
 * The dedup list of a submit call (submit.lua ARGV[5], DEDUP_FIELDS per job that has a dedup
 * key), or '' when no job of the call has one.
 */
function packDedups(jobs: readonly SubmitJob[]): Buffer | '' {
  let fields: StringValue[] | undefined;
  jobs.forEach((s, k) => {
    const d = s.dedup;
    if (!d) return;
    fields ??= [];
    fields.push(
      String(k + 1),
      d.key,
      DEDUP_UNTIL[d.until],
      d.ttl !== undefined ? String(d.ttl) : '',
      `${d.replace ? 'r' : ''}${d.extend ? 'x' : ''}`,
    );
  });
  return fields ? packStrings(fields, Infinity, 'dedup') : '';
}

/**
 * Packs jobs into submit.lua's job list: one MessagePack array of the per-job fields, flat, so
 * that a call carries one argument however many jobs it holds (see ./string-array.ts). A job has
 * the first SUBMIT_WIDTH of SUBMIT_FIELDS (id, description, group, priority), all of them when
 * some job of the call has a due time (runAt: ms, or DELAY_MARK and a delay; '' for the others).
 * Refuses, with a PayloadTooLargeError naming `specs`, a list over `limit` bytes.
 */
export function packSubmits(jobs: readonly SubmitJob[], limit: number): { packed: Buffer; width: number; dedups: Buffer | '' } {
  const due = jobs.some((s) => s.runAt !== undefined || s.delay !== undefined);
  const fields: StringValue[] = [];
  // (in the order of SUBMIT_FIELDS)
  for (const s of jobs) {
    const d = s.dedup ? { ...s, dedupKey: s.dedup.key } : s;
    fields.push(s.id!, packDescription(d, s.packedArgs, s.trace), s.group, s.priority);
    if (due) fields.push(s.runAt !== undefined ? String(s.runAt) : s.delay !== undefined ? `${DELAY_MARK}${s.delay}` : '');
  }
  return {
    packed: packStrings(fields, limit, 'specs'),
    width: due ? SUBMIT_FIELDS.length : SUBMIT_WIDTH,
    dedups: packDedups(jobs),
  };
}

/** A job of a flow (or a fan-out with a continuation or a failure policy): a submit job, and its place in the tree. */
export interface FlowRecord extends SubmitJob {
  id: string;
  /** How many children it waits for (absent: none, it is runnable at once). */
  children?: number;
  /** What its failure does to the job waiting on it (absent: `fail`). */
  policy?: keyof typeof FAILURE_POLICY;
}

/**
 * Packs flow jobs into one list in the flow format (FLOW_RECORD, see lua/includes/flowJob): the
 * submit fields, the children waited for ('' none) and the failure policy's code. With `chunk`,
 * the list begins FLOW_CHUNK_MARK, as a staged chunk that fanout.lua tells apart. A job's due
 * time is not carried (flow jobs have none).
 */
export function packFlow(jobs: readonly FlowRecord[], chunk: boolean): Buffer {
  const fields: StringValue[] = [];
  for (const s of jobs) {
    fields.push(
      s.id,
      packDescription(s, s.packedArgs, s.trace),
      s.group,
      s.priority,
      s.children !== undefined ? String(s.children) : '',
      FAILURE_POLICY[s.policy ?? 'fail'],
    );
  }
  const packed = packStrings(fields, Infinity, 'flow');
  return chunk ? Buffer.concat([Buffer.from(FLOW_CHUNK_MARK), packed]) : packed;
}

/**
 * Appends a run to a finish batch (see finish.lua ARGV[11]): job id, lease token, outcome
 * (prefixed when its start was not sent: the finish marks it started first), payload (the packed
 * result, or the error).
 */
export function addRun(
  runs: StringValue[],
  id: string,
  token: string,
  outcome: OutcomeCode,
  unstarted: boolean,
  payload: string | Buffer,
): void {
  runs.push(id, token, unstarted ? UNSTARTED_PREFIX + outcome : outcome, payload);
}

const END_STATES: Record<string, JobState | ''> = { [END_REFUSED]: '' };
for (const [state, code] of Object.entries(END_CODES)) END_STATES[code] = state as JobState;

/** The end state of each run of a finish call, from its answer's one character a run ('' when refused). */
export function decodeEndStates(codes: string): Array<JobState | ''> {
  const out: Array<JobState | ''> = [];
  for (const c of codes) out.push(END_STATES[c] ?? '');
  return out;
}

/**
 * The jobs taken by executor `worker` from a take reply (see lua/includes/take): a flat list, the
 * first job's take sequence (the next jobs have the next numbers), then per job (TAKEN_WIDTH) id,
 * description, submitted (for a job submitted with a due time, [submitted, runAt]), and nil, or
 * for a job that failed before [retries, due, error].
 */
export function decodeTaken(flat: Array<unknown>, worker: string): Job[] {
  const jobs: Job[] = [];
  const first = Number(flat[0]);
  for (let i = 1, seq = first; i + TAKEN_WIDTH <= flat.length; i += TAKEN_WIDTH, seq++) {
    // (a job submitted with a due time answers [submitted, runAt])
    const submitted = flat[i + 2] as Buffer | [Buffer, Buffer];
    const due = Array.isArray(submitted);
    const job: Record<string, unknown> = {
      id: String(flat[i]),
      takeSeq: seq,
      retries: 0,
      submitted: Number(due ? submitted[0] : submitted),
      state: 'scheduled',
      worker,
      subject: '',
      submitter: '',
    };
    if (due) job.runAt = Number(submitted[1]);
    const retried = flat[i + 3] as Array<Buffer | null> | null;
    if (retried) {
      const [retries, due, error] = retried;
      job.retries = Number(retries);
      if (due) job.due = Number(due);
      if (error) job.error = error.toString();
    }
    jobs.push(assignDescription(job, flat[i + 1] as Buffer) as unknown as Job);
  }
  return jobs;
}
