/**
 * The pool of one isolated task: its threads or child processes (./isolate-member.ts), started
 * on demand up to its size and kept for the next job (a module loads once per member, not per
 * job), each running up to `jobsEach` runs at once; recycled after N jobs or above a memory mark,
 * replaced after a crash, and started again by itself after a failed start. A run here is the
 * handler's side of a {@link Run}: the context's data is sent over, its method calls come back
 * and are made on the real context, and the signal's abort goes over.
 */
import { availableParallelism } from 'node:os';
import { IsolateError, PermanentError } from '../errors.js';
import type { JobContext } from '../queue/context.js';
import { type EndCause, type Ending, Member } from './isolate-member.js';
import { BATCH_CALL, BATCH_METHODS, type FromIsolate, fromWire, toWire } from './isolate-protocol.js';
import type { IsolatedSpec } from './isolated.js';
import { onAbandon, onAborted } from './run.js';

/** What a pool reports (Worker.pools(), the metrics). */
export interface PoolStats {
  task: string;
  in: 'thread' | 'process';
  /** Threads or processes alive (started or starting). */
  size: number;
  /** Of those, running a job. */
  busy: number;
  /** Its most. */
  max: number;
  /** Threads or processes ended and replaced (or to be), by cause. */
  restarts: Partial<Record<EndCause, number>>;
  /** Why the last start failed, while no start has succeeded since. */
  startError?: string;
  /** CPU time of its processes (µs; threads count in the executor's own process). */
  cpuUs: number;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;
/** The first wait before a pool whose start failed tries again (doubling up to {@link RESTART_MAX_MS}). */
export const RESTART_FIRST_MS = 500;
const RESTART_MAX_MS = 30_000;

/** A run on a member, as the member's messages and end reach it. */
interface Running {
  message(m: FromIsolate): void;
  ended(e: Ending): void;
}

/** The number of threads or processes and the runs each takes at once, from the task's options and the executor's concurrency. */
export function poolSize(spec: IsolatedSpec, concurrency: number): { max: number; jobsEach: number } {
  if (spec.max !== undefined || spec.jobsEach !== undefined) {
    const max = Math.min(spec.max ?? Math.ceil(concurrency / (spec.jobsEach ?? 1)), concurrency);
    return { max, jobsEach: spec.jobsEach ?? Math.ceil(concurrency / max) };
  }
  // (default: no more threads or processes than cores, the executor's concurrency shared among them)
  const max = Math.max(1, Math.min(concurrency, availableParallelism()));
  return { max, jobsEach: Math.ceil(concurrency / max) };
}

export class Pool {
  /** Members that take runs (not those ending or draining). */
  private readonly members = new Set<Member>();
  /** Runs on each live member, by run number; a slot is counted from the run's acquire. */
  private readonly runs = new Map<Member, Map<number, Running>>();
  private readonly slots = new Map<Member, number>();
  /** Why each draining member ends once its last run is done. */
  private readonly draining = new Map<Member, Ending>();
  /** Runs waiting for a member. */
  private readonly waiting: Array<{ give(m: Member): void; fail(err: unknown): void }> = [];
  private readonly restarts: Partial<Record<EndCause, number>> = {};
  private readonly ends = new Set<Promise<Ending>>();
  private startError: string | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private restartMs = RESTART_FIRST_MS;
  private closed = false;
  private seq = 0;
  private endedCpuUs = 0;
  readonly max: number;
  readonly jobsEach: number;

  constructor(
    readonly task: string,
    readonly spec: IsolatedSpec,
    concurrency: number,
    private readonly graceMs: number,
  ) {
    ({ max: this.max, jobsEach: this.jobsEach } = poolSize(spec, concurrency));
  }

  /** Starts the pool's first members (`min`, default 1); resolves once they are up or failed (see {@link stats}). */
  async warm(): Promise<void> {
    const n = Math.min(this.spec.min ?? 1, this.max);
    const started: Member[] = [];
    while (this.members.size < n) started.push(this.spawn());
    await Promise.all(
      started.map((m) =>
        m.ready.then(
          () => this.serveWaiting(),
          () => undefined,
        ),
      ),
    );
  }

  stats(): PoolStats {
    let busy = 0;
    for (const r of this.runs.values()) busy += r.size;
    return {
      task: this.task,
      in: this.spec.in,
      size: this.members.size + this.draining.size,
      busy,
      max: this.max,
      restarts: { ...this.restarts },
      ...(this.startError !== null ? { startError: this.startError } : {}),
      cpuUs: this.endedCpuUs + [...this.runs.keys()].reduce((s, m) => s + m.cpuUs, 0),
    };
  }

  private spawn(): Member {
    const m = new Member({
      in: this.spec.in,
      module: this.spec.module,
      exportName: this.spec.export,
      task: this.task,
      memoryLimitMb: this.spec.memoryLimitMb,
      startTimeoutMs: this.spec.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    });
    this.members.add(m);
    const runs = new Map<number, Running>();
    this.runs.set(m, runs);
    this.slots.set(m, 0);
    m.onMessage((msg) => {
      if (msg.t === 'call' || msg.t === 'done') runs.get(msg.seq)?.message(msg);
    });
    m.ready.then(
      () => {
        this.startError = null;
        this.restartMs = RESTART_FIRST_MS;
      },
      (err: Error) => {
        this.startError = err.message;
      },
    );
    this.ends.add(m.ended);
    void m.ended.then((e) => {
      this.ends.delete(m.ended);
      this.members.delete(m);
      this.draining.delete(m);
      this.runs.delete(m);
      this.slots.delete(m);
      this.endedCpuUs += m.cpuUs;
      if (e.cause !== 'closed') this.restarts[e.cause] = (this.restarts[e.cause] ?? 0) + 1;
      for (const run of runs.values()) run.ended(e);
      this.serveWaiting();
      if (e.cause === 'start') this.restartLater();
    });
    m.init();
    return m;
  }

  /** After a failed start with nothing left running, starts a member again by itself (readiness then recovers with no job to prompt it). */
  private restartLater(): void {
    if (this.closed || this.restartTimer || this.members.size > 0) return;
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.closed || this.members.size > 0) return;
      const m = this.spawn();
      m.ready.then(
        () => this.serveWaiting(),
        () => undefined,
      );
    }, this.restartMs);
    this.restartTimer.unref();
    this.restartMs = Math.min(this.restartMs * 2, RESTART_MAX_MS);
  }

  /** Whether `m` can take one more run now. */
  private free(m: Member): boolean {
    if (!m.up || m.dead || !this.members.has(m)) return false;
    const used = this.slots.get(m) ?? 0;
    const cap = this.spec.recycleAfterJobs;
    return used < this.jobsEach && (cap === undefined || m.jobs + used < cap);
  }

  /** The member with a free slot that runs the fewest jobs, or undefined. */
  private leastBusy(): Member | undefined {
    let best: Member | undefined;
    for (const m of this.members) {
      if (this.free(m) && (best === undefined || this.slots.get(m)! < this.slots.get(best)!)) best = m;
    }
    return best;
  }

  private take(m: Member): Member {
    this.slots.set(m, (this.slots.get(m) ?? 0) + 1);
    return m;
  }

  /** A member for a run: an idle one, a new one while the pool is below its size, one with a free slot, else the next one freed. */
  private acquire(ctx: JobContext): Promise<Member> {
    const m = this.leastBusy();
    if (m && this.slots.get(m) === 0) return Promise.resolve(this.take(m));
    if (this.members.size < this.max) {
      const fresh = this.take(this.spawn());
      return fresh.ready.then(() => fresh);
    }
    if (m) return Promise.resolve(this.take(m));
    // (a run that waits for a member reads its signal: it may abort while it waits)
    const { signal } = ctx;
    return new Promise<Member>((resolve, reject) => {
      const entry = {
        give: (member: Member) => {
          signal.removeEventListener('abort', onAbort);
          resolve(this.take(member));
        },
        fail: (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  /** A run on `m` ended: `m` drains when it reached its jobs or its memory mark, else its slot goes to the next run waiting. */
  private release(m: Member): void {
    if (m.dead) return;
    this.slots.set(m, Math.max(0, (this.slots.get(m) ?? 1) - 1));
    if (this.members.has(m)) {
      const { recycleAfterJobs, recycleAboveMb } = this.spec;
      if (this.closed) this.drain(m, { cause: 'closed', message: 'the executor closed' });
      else if (recycleAfterJobs !== undefined && m.jobs >= recycleAfterJobs) {
        this.drain(m, { cause: 'recycled', message: `recycled after ${m.jobs} jobs` });
      } else if (recycleAboveMb !== undefined && m.mb >= recycleAboveMb) {
        this.drain(m, { cause: 'memory', message: `recycled at ${Math.round(m.mb)} MB (mark: ${recycleAboveMb} MB)` });
      }
    }
    const ending = this.draining.get(m);
    if (ending && this.slots.get(m) === 0) m.end(ending);
    this.serveWaiting();
  }

  /** Takes `m` out of service: it ends once its runs are done. */
  private drain(m: Member, ending: Ending): void {
    this.members.delete(m);
    this.draining.set(m, ending);
  }

  /** Gives free slots to the runs waiting, and starts members for them while the pool has room. */
  private serveWaiting(): void {
    while (!this.closed && this.waiting.length > 0) {
      const m = this.leastBusy();
      if (m) {
        this.waiting.shift()!.give(m);
        continue;
      }
      if (this.members.size >= this.max) return;
      const next = this.waiting.shift()!;
      const fresh = this.spawn();
      fresh.ready.then(
        () => next.give(fresh),
        (err) => next.fail(err),
      );
    }
  }

  /** Runs the handler of `ctx`'s job in a member; settles as the handler did there, or with an {@link IsolateError}. */
  async run(ctx: JobContext): Promise<unknown> {
    if (this.closed) throw new IsolateError('closed', 'the executor is closing');
    const member = await this.acquire(ctx);
    const runs = this.runs.get(member);
    if (member.dead || !runs) {
      throw new IsolateError('crash', `the ${this.spec.in} of task "${this.task}" ended before the job was sent`);
    }
    const seq = ++this.seq;
    const data: Record<string, unknown> = {};
    const methods: string[] = [];
    const fields = ctx as unknown as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      if (key === 'signal') continue;
      const v = fields[key];
      if (typeof v === 'function') methods.push(key);
      else data[key] = v;
    }
    // (a batch's handle, not enumerable: its id as data, its methods as `batch.<name>` calls)
    const batch = (ctx as { batch?: { id: string } }).batch;
    if (batch) {
      data.batch = { id: batch.id };
      for (const m of BATCH_METHODS) methods.push(`${BATCH_CALL}${m}`);
    }
    const where = this.spec.in === 'thread' ? 'thread' : `process ${member.pid}`;
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      let culprit = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        runs.delete(seq);
        fn();
      };
      runs.set(seq, {
        ended: (e) =>
          finish(() => {
            const others = e.cause === 'abandoned' && !culprit ? ' (another job on it)' : '';
            reject(new IsolateError(e.cause, `the ${where} of task "${this.task}" ${e.message}${others}`));
          }),
        message: (m) => {
          if (m.t === 'call') this.call(member, fields, m.call, m.method, m.args);
          else if (m.t === 'done') {
            member.jobs++;
            member.mb = m.mb;
            if (m.cpuUs !== undefined) member.cpuUs = m.cpuUs;
            finish(() => (m.ok ? resolve(m.value) : reject(fromWire(m.error))));
            this.release(member);
          }
        },
      });
      onAbandon(ctx, () => {
        const what = this.spec.in === 'thread' ? 'its thread was terminated' : `its process (${member.pid}) was killed`;
        const note = `the handler ignored its aborted signal for ${this.graceMs} ms: ${what}`;
        culprit = true;
        this.members.delete(member);
        member.end({ cause: 'abandoned', message: note });
        return note;
      });
      member.send({ t: 'run', seq, data, methods }, (err) => {
        finish(() => reject(new PermanentError(`the job cannot be sent to its ${this.spec.in}: ${err.message}`)));
        this.release(member);
      });
      onAborted(ctx, (message) => {
        if (!settled) member.send({ t: 'abort', seq, message });
      });
    });
  }

  /** Makes a context method call of the member's run on the real context, and answers it. */
  private call(member: Member, ctx: Record<string, unknown>, call: number, method: string, args: unknown[]): void {
    const refused = (err: unknown) => member.send({ t: 'reply', call, ok: false, error: toWire(err) });
    const answer = (p: Promise<unknown>) =>
      p.then((value) => member.send({ t: 'reply', call, ok: true, value }, refused), refused);
    const inBatch = method.startsWith(BATCH_CALL) ? method.slice(BATCH_CALL.length) : undefined;
    const owner = inBatch === undefined ? ctx : (ctx.batch as Record<string, unknown> | undefined);
    const name = inBatch ?? method;
    const known = inBatch === undefined ? Object.hasOwn(ctx, method) : owner !== undefined && BATCH_METHODS.includes(name);
    const fn = known ? owner![name] : undefined;
    if (typeof fn !== 'function') {
      void answer(Promise.reject(new Error(`the context has no method "${method}"`)));
      return;
    }
    try {
      void answer(Promise.resolve((fn as (...a: unknown[]) => unknown).apply(owner, args)));
    } catch (err) {
      void answer(Promise.reject(err));
    }
  }

  /** Ends every member (after the executor's runs ended or were released) and waits until they are gone. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    for (const w of this.waiting.splice(0)) w.fail(new IsolateError('closed', 'the executor is closing'));
    for (const m of [...this.runs.keys()]) m.end({ cause: 'closed', message: 'the executor closed' });
    await Promise.all([...this.ends]);
  }
}
