/**
 * A periodic task's run history as records: the history entries (`p:h:<id>`, read through
 * PeriodicReads) joined with their jobs and log lines.
 */
import { type ChildCounts, decodeJobObject, type Job, type JobState } from '../redis/job-codec.js';
import type { PeriodicReads, RunJob } from '../redis/periodic-reads.js';
import { HISTORY_EXCLUDED, HISTORY_FAILED, HISTORY_MISSED, HISTORY_REPLACED, HISTORY_SKIPPED } from '../redis/wire.js';

/** Status of a run in the history: a job state, or an occurrence that never became a job. */
export type RunStatus = JobState | 'skipped' | 'missed' | 'dropped' | 'expired' | 'replaced' | 'excluded';

/** One entry of a task's run history ({@link PeriodicTasks.runs}). Times are ms (server clock). */
export interface RunRecord {
  /** Planned time of the occurrence. */
  occurrence: number;
  /** When it was due: the occurrence plus the task's jitter offset (absent without jitter). */
  due?: number;
  /**
   * `skipped`: not submitted because an earlier run had not ended (overlap); `missed`: passed over
   * by the catch-up policy (`count` occurrences up to `until`); `dropped`: started too soon after
   * the previous run (tolerance); `expired`: its job was removed by retention; `replaced`: an event
   * rule's run that a newer event replaced before it was released; `excluded`: in one of the
   * task's exclusions, not run; else the job's state. `failed`
   * with no job: the task's timer stopped advancing there, and a scheduler disabled the task.
   */
  status: RunStatus;
  jobId?: string;
  submitted?: number;
  started?: number;
  finished?: number;
  /** Executor id, and the host and pid it ran on. */
  worker?: string;
  host?: string;
  pid?: number;
  retries?: number;
  /** Log lines the run wrote with `ctx.log`. */
  logs?: string[];
  /** Error output of a failed run, or the reason of a drop. */
  error?: string;
  result?: unknown;
  /** For `missed`: how many occurrences, and the last of them. */
  count?: number;
  /** A backfill's run of this occurrence ({@link PeriodicTasks.backfill}). */
  backfill?: true;
  /**
   * For a run whose job fanned out (ctx.fanOut): its children by state. Such a run ends when its
   * last child ends: until then its status is `running` and it has no `finished`; then it is
   * `failed` when a child failed, else the job's state, and `finished` is when the last child ended.
   */
  children?: ChildCounts;
  until?: number;
  /**
   * An event rule's run that a newer event replaced: the occurrence of the run that replaced it.
   * On a run with a job status, the newer event came before this run was due but after it was
   * released, so it ran all the same.
   */
  replacedBy?: number;
}

/**
 * The newest `limit` run records of task `id`, newest first. Staged occurrences (the newest
 * entries) are not runs yet: it reads on past them until it has `limit` runs.
 */
export async function readRuns(reads: PeriodicReads, id: string, limit: number): Promise<RunRecord[]> {
  const out: RunRecord[] = [];
  for (let start = 0; out.length < limit; start += limit) {
    const raw = await reads.history(id, start, start + limit - 1);
    out.push(...(await records(reads, raw)));
    if (raw.length < limit * 2) break;
  }
  return out.slice(0, limit);
}

/** The run records of history entries (`member, score` pairs), without the staged occurrences. */
async function records(reads: PeriodicReads, raw: string[]): Promise<RunRecord[]> {
  const entries: Array<{ member: string; occurrence: number }> = [];
  for (let i = 0; i < raw.length; i += 2) entries.push({ member: raw[i], occurrence: Number(raw[i + 1]) });
  const jobs = entries.filter((e) => !e.member.startsWith('~'));
  const got = await reads.runJobs(jobs.map((e) => e.member));
  const byId = new Map<string, RunJob>(jobs.map((e, k) => [e.member, got[k]]));
  // A staged occurrence (its job still `planned`) has not run yet.
  const planned = (e: { member: string }) => byId.get(e.member)?.job?.state?.toString() === 'planned';
  // `~replaced@<occurrence>@<new occurrence>`: on the run of that occurrence when it was released, else its own entry.
  const replacedBy = new Map<number, number>();
  for (const e of entries) {
    if (e.member.startsWith(HISTORY_REPLACED)) replacedBy.set(e.occurrence, Number(e.member.split('@')[2]));
  }
  const released = new Set(jobs.filter((e) => !planned(e)).map((e) => e.occurrence));
  return entries
    .filter((e) => !planned(e) && !(e.member.startsWith(HISTORY_REPLACED) && released.has(e.occurrence)))
    .map((e): RunRecord => {
      const record = runRecord(e, byId);
      const by = replacedBy.get(e.occurrence);
      return by === undefined || record.status === 'skipped' || record.status === 'missed'
        ? record
        : { ...record, replacedBy: by };
    });
}

/** One run history entry read into a record (`byId`: the jobs of the entries that name one, with their logs). */
function runRecord(e: { member: string; occurrence: number }, byId: Map<string, RunJob>): RunRecord {
  if (e.member.startsWith(HISTORY_REPLACED)) return { occurrence: e.occurrence, status: 'replaced' };
  if (e.member.startsWith(HISTORY_SKIPPED)) return { occurrence: e.occurrence, status: 'skipped' };
  if (e.member.startsWith(HISTORY_EXCLUDED)) return { occurrence: e.occurrence, status: 'excluded' };
  if (e.member.startsWith(HISTORY_FAILED)) {
    // `~failed@<occurrence>@<error>`: the timer stopped advancing there (the error may hold '@')
    return {
      occurrence: e.occurrence,
      status: 'failed',
      error: e.member.slice(e.member.indexOf('@', HISTORY_FAILED.length) + 1),
    };
  }
  if (e.member.startsWith(HISTORY_MISSED)) {
    const [, , count, last] = e.member.split('@');
    return { occurrence: e.occurrence, status: 'missed', count: Number(count), until: Number(last) };
  }
  const got = byId.get(e.member)!;
  const job = decodeJobObject(e.member, got.job ?? {});
  if (!job) return { occurrence: e.occurrence, status: 'expired', jobId: e.member };
  const hostPid = got.job.host ? { host: got.job.host.toString(), pid: Number(got.job.pid?.toString()) } : {};
  const dropped = got.job.dropped?.toString();
  const ended = fannedOutEnd(job);
  const due = got.job.jitterDue?.toString();
  return {
    occurrence: e.occurrence,
    ...(due ? { due: Number(due) } : {}),
    jobId: e.member,
    status: dropped ? 'dropped' : ended.status,
    submitted: job.submitted,
    started: job.started,
    finished: ended.finished,
    worker: job.worker,
    ...hostPid,
    retries: job.retries,
    logs: got.logs,
    error: dropped ?? job.error,
    result: job.result,
    ...(job.children ? { children: job.children } : {}),
    ...(got.job.backfill ? { backfill: true as const } : {}),
  };
}
/**
 * A run's status and end as the history shows them: a job that fanned out ends when its children
 * end, failed when one of them failed.
 */
function fannedOutEnd(job: Job): { status: RunStatus; finished?: number } {
  const c = job.children;
  if (!c || job.state !== 'success') return { status: job.state, finished: job.finished };
  if (c.ended === undefined) return { status: 'running' };
  return { status: c.failed > 0 ? 'failed' : 'success', finished: c.ended };
}
