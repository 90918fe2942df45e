/**
 * The pool of one isolated task: its threads or child processes (./isolate-member.ts), started
 * on demand up to its size and kept for the next job (a module loads once per member, not per
 * job), one run at a time each; recycled after N jobs or above a memory mark, replaced after a
 * crash. A run here is the handler's side of a {@link Run}: the context's data is sent over, its
 * method calls come back and are made on the real context, and the signal's abort goes over.
 */
import { IsolateError, PermanentError } from '../errors.js';
import type { JobContext } from '../queue/context.js';
import { type EndCause, type Ending, Member } from './isolate-member.js';
import { type FromIsolate, fromWire, toWire } from './isolate-protocol.js';
import type { IsolatedSpec } from './isolated.js';
import { onAbandon } from './run.js';

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

export class Pool {
  /** Members that take runs (not those ending). */
  private readonly members = new Set<Member>();
  private readonly idle: Member[] = [];
  /** Runs waiting for a member. */
  private readonly waiting: Array<{ give(m: Member): void; fail(err: unknown): void }> = [];
  /** What each busy member's end means to its run. */
  private readonly running = new Map<Member, (e: Ending) => void>();
  private readonly restarts: Partial<Record<EndCause, number>> = {};
  private readonly ends = new Set<Promise<Ending>>();
  private startError: string | null = null;
  private closed = false;
  private seq = 0;
  private endedCpuUs = 0;
  readonly max: number;

  constructor(
    readonly task: string,
    readonly spec: IsolatedSpec,
    concurrency: number,
    private readonly graceMs: number,
  ) {
    this.max = Math.min(spec.max ?? concurrency, concurrency);
  }

  /** Starts the pool's first members (`min`, default 1); resolves once they are up or failed (see {@link stats}). */
  async warm(): Promise<void> {
    const n = Math.min(this.spec.min ?? 1, this.max);
    const started: Member[] = [];
    while (this.members.size < n) started.push(this.spawn());
    await Promise.all(
      started.map((m) =>
        m.ready.then(
          () => this.release(m),
          () => undefined,
        ),
      ),
    );
  }

  stats(): PoolStats {
    return {
      task: this.task,
      in: this.spec.in,
      size: this.members.size,
      busy: this.running.size,
      max: this.max,
      restarts: { ...this.restarts },
      ...(this.startError !== null ? { startError: this.startError } : {}),
      cpuUs: this.endedCpuUs + [...this.members].reduce((s, m) => s + m.cpuUs, 0),
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
    m.ready.then(
      () => {
        this.startError = null;
      },
      (err: Error) => {
        this.startError = err.message;
      },
    );
    this.ends.add(m.ended);
    void m.ended.then((e) => {
      this.ends.delete(m.ended);
      this.forget(m);
      this.endedCpuUs += m.cpuUs;
      if (e.cause !== 'closed') this.restarts[e.cause] = (this.restarts[e.cause] ?? 0) + 1;
      const run = this.running.get(m);
      this.running.delete(m);
      run?.(e);
      this.serveWaiting();
    });
    m.init();
    return m;
  }

  /** Takes `m` out of service (it ended, or is ending). */
  private forget(m: Member): void {
    this.members.delete(m);
    const i = this.idle.indexOf(m);
    if (i >= 0) this.idle.splice(i, 1);
  }

  /** A member for a run: an idle one, a new one while the pool is below its size, else the next one freed. */
  private acquire(signal: AbortSignal): Promise<Member> {
    const m = this.idle.pop();
    if (m) return Promise.resolve(m);
    if (this.members.size < this.max) {
      const fresh = this.spawn();
      return fresh.ready.then(() => fresh);
    }
    return new Promise<Member>((resolve, reject) => {
      const entry = {
        give: (member: Member) => {
          signal.removeEventListener('abort', onAbort);
          resolve(member);
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

  /** A member is free: recycled when it reached its jobs or its memory mark, else given to the next run waiting or kept. */
  private release(m: Member): void {
    if (m.dead || !this.members.has(m)) return;
    const { recycleAfterJobs, recycleAboveMb } = this.spec;
    if (this.closed) m.end({ cause: 'closed', message: 'the executor closed' });
    else if (recycleAfterJobs !== undefined && m.jobs >= recycleAfterJobs) {
      m.end({ cause: 'recycled', message: `recycled after ${m.jobs} jobs` });
    } else if (recycleAboveMb !== undefined && m.mb >= recycleAboveMb) {
      m.end({ cause: 'memory', message: `recycled at ${Math.round(m.mb)} MB (mark: ${recycleAboveMb} MB)` });
    } else {
      const next = this.waiting.shift();
      if (next) next.give(m);
      else this.idle.push(m);
      return;
    }
    this.forget(m);
    this.serveWaiting();
  }

  /** Starts members for the runs waiting, while the pool has room. */
  private serveWaiting(): void {
    while (!this.closed && this.waiting.length > 0 && this.members.size < this.max) {
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
    const { signal } = ctx;
    const member = await this.acquire(signal);
    if (member.dead) throw new IsolateError('crash', `the ${this.spec.in} of task "${this.task}" ended before the job was sent`);
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
    const where = this.spec.in === 'thread' ? 'thread' : `process ${member.pid}`;
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        member.onMessage(null);
        fn();
      };
      this.running.set(member, (e) =>
        finish(() => reject(new IsolateError(e.cause, `the ${where} of task "${this.task}" ${e.message}`))),
      );
      member.onMessage((m: FromIsolate) => {
        if (m.t === 'call') this.call(member, fields, m.call, m.method, m.args);
        else if (m.t === 'done' && m.seq === seq) {
          member.jobs++;
          member.mb = m.mb;
          if (m.cpuUs !== undefined) member.cpuUs = m.cpuUs;
          this.running.delete(member);
          finish(() => (m.ok ? resolve(m.value) : reject(fromWire(m.error))));
          this.release(member);
        }
      });
      const onAbort = () => {
        const reason = signal.reason as { message?: unknown } | undefined;
        member.send({ t: 'abort', seq, message: String(reason?.message ?? 'aborted') });
      };
      signal.addEventListener('abort', onAbort, { once: true });
      onAbandon(ctx, () => {
        const what = this.spec.in === 'thread' ? 'its thread was terminated' : `its process (${member.pid}) was killed`;
        const note = `the handler ignored its aborted signal for ${this.graceMs} ms: ${what}`;
        this.forget(member);
        member.end({ cause: 'abandoned', message: note });
        return note;
      });
      try {
        member.send({ t: 'run', seq, data, methods });
      } catch (err) {
        this.running.delete(member);
        finish(() => reject(new PermanentError(`the job cannot be sent to its ${this.spec.in}: ${(err as Error).message}`)));
        this.release(member);
        return;
      }
      if (signal.aborted) onAbort();
    });
  }

  /** Makes a context method call of the member's run on the real context, and answers it. */
  private call(member: Member, ctx: Record<string, unknown>, call: number, method: string, args: unknown[]): void {
    const answer = (p: Promise<unknown>) =>
      p.then(
        (value) => {
          try {
            member.send({ t: 'reply', call, ok: true, value });
          } catch (err) {
            member.send({ t: 'reply', call, ok: false, error: toWire(err) });
          }
        },
        (err: unknown) => member.send({ t: 'reply', call, ok: false, error: toWire(err) }),
      );
    const fn = Object.hasOwn(ctx, method) ? ctx[method] : undefined;
    if (typeof fn !== 'function') {
      void answer(Promise.reject(new Error(`the context has no method "${method}"`)));
      return;
    }
    try {
      void answer(Promise.resolve((fn as (...a: unknown[]) => unknown)(...args)));
    } catch (err) {
      void answer(Promise.reject(err));
    }
  }

  /** Ends every member (after the executor's runs ended or were released) and waits until they are gone. */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w.fail(new IsolateError('closed', 'the executor is closing'));
    for (const m of [...this.members]) m.end({ cause: 'closed', message: 'the executor closed' });
    await Promise.all([...this.ends]);
  }
}
