/** Reads the queue's events stream: one entry per script call, holding every state change it made. */
import { ValidationError } from '../errors.js';
import type { ConnectionOption } from '../redis/connection.js';
import { streamEntries } from '../redis/event-stream.js';
import {
  EVENT_BATCH_FIELD,
  EVENT_CHILDREN_ENDED_FIELD,
  EVENT_DEDUPLICATED_FIELD,
  EVENT_ERRORS_FIELD,
  EVENT_PERIODIC_ENDED_FIELD,
  EVENT_PERIODIC_FAILED_FIELD,
  EVENT_PERIODIC_PAUSED_FIELD,
  EVENT_PROGRESS_FIELD,
  EVENT_RELEASED_FIELD,
  EVENT_TIMER_FAILED_FIELD,
} from '../redis/wire.js';
import { JOB_STATES, type JobState } from './job.js';

const STATES = new Set<string>(JOB_STATES);

/**
 * One job's change of state; or, with `event` set, one of these: `'periodic.failed'`, `'periodic.paused'`,
 * `'children.ended'` (every child of a fan-out parent ended; `state` is the parent's), `'progress'`
 * (a running job's progress, throttled by its executor; `state` is `running`).
 */
export interface QueueEvent {
  /** Id of the stream entry it came in; pass it as `from` to resume after it. */
  streamId: string;
  /** The job's id. */
  id: string;
  /** The state the job entered. */
  state: JobState;
  /** The error, for `stuck` and `failed`. */
  error?: string;
  /**
   * `'periodic.failed'` when a run of a periodic task failed for good (`state` is `failed`; for a
   * run that fanned out: one of its children failed, and all have ended), or when a scheduler
   * disabled a task whose timer stopped advancing (no job: `id` is `<task>@<occurrence>`); hook alerts (log,
   * webhook, e-mail) on it. `'children.ended'` when the last child of a fan-out parent ended (once
   * per parent). `'progress'` when a running job reported progress. `'periodic.ended'` when a
   * periodic task's schedule ran out (past its endAt, out of runs, a one-shot done; no job: `id`
   * is the task id, `state` is `success`). `'periodic.paused'` when the failed run `id` disabled
   * its task (`pauseOnFailure`); `error` is the task's note. `'deduplicated'` when a submit added
   * no job because job `id` (in `state`) holds its dedup key (`dedup`).
   */
  event?:
    | 'periodic.failed'
    | 'periodic.paused'
    | 'children.ended'
    | 'flow.released'
    | 'progress'
    | 'periodic.ended'
    | 'deduplicated'
    | 'batch.completed'
    | 'batch.succeeded';
  /**
   * For flow.released (a job left `waiting-children` for `waiting`: a flow's parent, a fan-out's
   * continuation): `children` when its last child ended, `continue` when a child's failure policy
   * released it at once.
   */
  released?: 'children' | 'continue';
  /** For periodic.failed and periodic.paused: the periodic task id and the occurrence (planned time, ms) of the run; for periodic.ended the task. */
  periodic?: { task: string; occurrence?: number };
  /** For children.ended: how many children the parent had, and how each ended. */
  children?: { total: number; success: number; failed: number; cancelled: number };
  /** For progress: the value the handler reported (ctx.progress). */
  progress?: number;
  /** For deduplicated: the dedup key, and whether the submit replaced the job's args (dedup.replace). */
  dedup?: { key: string; replaced: boolean };
  /**
   * For batch.completed (every job of batch `id` ended after its close; its onComplete callback
   * was submitted) and batch.succeeded (every one succeeded; onSuccess): its counts. `state` is
   * `success`; no job has the batch's id.
   */
  batch?: { total: number; success: number; failed: number; cancelled: number };
}

/** Parses one stream entry's fields into events (key layout: docs/architecture.md). */
export function parseEntry(streamId: string, fields: string[]): QueueEvent[] {
  const out: QueueEvent[] = [];
  let periodic: Map<string, [string, number | false]> | null = null;
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] !== EVENT_PERIODIC_FAILED_FIELD) continue;
    periodic = new Map();
    for (const [id, task, occurrence] of JSON.parse(fields[i + 1]) as Array<[string, string, number | false, unknown]>) {
      periodic.set(id, [task, occurrence]);
    }
  }
  const add = (id: string, state: JobState, err?: string | false) => {
    const e: QueueEvent = err ? { streamId, id, state, error: err } : { streamId, id, state };
    const p = state === 'failed' ? periodic?.get(id) : undefined;
    if (p) {
      e.event = 'periodic.failed';
      e.periodic = p[1] === false ? { task: p[0] } : { task: p[0], occurrence: p[1] };
    }
    out.push(e);
  };
  for (let i = 0; i < fields.length; i += 2) {
    const field = fields[i];
    if (field === EVENT_CHILDREN_ENDED_FIELD) {
      const ended = JSON.parse(fields[i + 1]) as Array<[string, number, number, number, number]>;
      for (const [id, total, success, failed, cancelled] of ended) {
        out.push({ streamId, id, state: 'success', event: 'children.ended', children: { total, success, failed, cancelled } });
        // A periodic run that fanned out fails when a child failed: its alert comes with this entry.
        const p = periodic?.get(id);
        if (p) {
          const e: QueueEvent = {
            streamId,
            id,
            state: 'failed',
            event: 'periodic.failed',
            error: `${failed} of ${total} children failed`,
          };
          e.periodic = p[1] === false ? { task: p[0] } : { task: p[0], occurrence: p[1] };
          out.push(e);
        }
      }
    } else if (field === EVENT_RELEASED_FIELD) {
      for (const [id, why] of JSON.parse(fields[i + 1]) as Array<[string, 'children' | 'continue']>) {
        out.push({ streamId, id, state: 'waiting', event: 'flow.released', released: why });
      }
    } else if (field === EVENT_TIMER_FAILED_FIELD) {
      // A task disabled because its timer stopped advancing: no job ran; the id is the occurrence's.
      for (const [task, occurrence, error] of JSON.parse(fields[i + 1]) as Array<[string, number | false, string]>) {
        const id = occurrence === false ? task : `${task}@${occurrence}`;
        const periodic = occurrence === false ? { task } : { task, occurrence };
        out.push({ streamId, id, state: 'failed', event: 'periodic.failed', error, periodic });
      }
    } else if (field === EVENT_PERIODIC_ENDED_FIELD) {
      for (const task of JSON.parse(fields[i + 1]) as string[]) {
        out.push({ streamId, id: task, state: 'success', event: 'periodic.ended', periodic: { task } });
      }
    } else if (field === EVENT_PERIODIC_PAUSED_FIELD) {
      // A task paused by its failed run (pauseOnFailure): the run's id, the task, its occurrence, the note.
      for (const [id, task, occurrence, note] of JSON.parse(fields[i + 1]) as Array<[string, string, number | false, string]>) {
        const periodic = occurrence === false ? { task } : { task, occurrence };
        out.push({ streamId, id, state: 'failed', event: 'periodic.paused', error: note, periodic });
      }
    } else if (field === EVENT_DEDUPLICATED_FIELD) {
      for (const [id, state, key, replaced] of JSON.parse(fields[i + 1]) as Array<[string, JobState, string, number]>) {
        out.push({ streamId, id, state, event: 'deduplicated', dedup: { key, replaced: replaced === 1 } });
      }
    } else if (field === EVENT_BATCH_FIELD) {
      const fired = JSON.parse(fields[i + 1]) as Array<[string, 'complete' | 'success', number, number, number, number]>;
      for (const [id, what, total, success, failed, cancelled] of fired) {
        const event = what === 'complete' ? 'batch.completed' : 'batch.succeeded';
        out.push({ streamId, id, state: 'success', event, batch: { total, success, failed, cancelled } });
      }
    } else if (field === EVENT_PROGRESS_FIELD) {
      for (const [id, progress] of JSON.parse(fields[i + 1]) as Array<[string, number]>) {
        out.push({ streamId, id, state: 'running', event: 'progress', progress });
      }
    } else if (field === EVENT_ERRORS_FIELD) {
      for (const [id, state, err] of JSON.parse(fields[i + 1]) as Array<[string, JobState, string | false]>) add(id, state, err);
    } else if (STATES.has(field)) {
      for (const id of JSON.parse(fields[i + 1]) as string[]) add(id, field as JobState);
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
  for await (const [id, fields] of streamEntries(connection, key, opts)) yield* parseEntry(id, fields);
}

/**
 * Events of a sharded queue: those of each shard's stream (`keys`, by shard number), in order
 * within each shard. An event's `streamId` is every shard's place after it (their stream ids
 * joined by `,`), so that `from` resumes each shard where it was; one key reads as {@link readEvents}.
 */
export async function* readShardEvents(
  connection: ConnectionOption,
  keys: readonly string[],
  opts: { from?: string; signal?: AbortSignal },
): AsyncGenerator<QueueEvent> {
  if (keys.length === 1) {
    yield* readEvents(connection, keys[0], opts);
    return;
  }
  const places = opts.from?.split(',') ?? keys.map(() => '$');
  if (places.length !== keys.length) {
    throw new ValidationError('from', `must hold one stream id per shard (${keys.length}), as an event's streamId does`);
  }
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  // Each shard's reader hands over its events one at a time: the next waits until it was yielded.
  let wake: (() => void) | null = null;
  const ready: Array<{ shard: number; event: QueueEvent; taken: () => void }> = [];
  let failure: unknown = null;
  let running = keys.length;
  const readers = keys.map(async (key, shard) => {
    try {
      for await (const event of readEvents(connection, key, { from: places[shard], signal: stop.signal })) {
        await new Promise<void>((taken) => {
          ready.push({ shard, event, taken });
          wake?.();
        });
      }
    } catch (err) {
      failure ??= err;
    } finally {
      running--;
      wake?.();
    }
  });
  try {
    while (!stop.signal.aborted) {
      const next = ready.shift();
      if (next) {
        places[next.shard] = next.event.streamId;
        yield { ...next.event, streamId: places.join(',') };
        next.taken();
        continue;
      }
      if (failure) throw failure;
      if (running === 0) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  } finally {
    stop.abort();
    opts.signal?.removeEventListener('abort', onAbort);
    for (const r of ready) r.taken();
    await Promise.allSettled(readers);
  }
}
