/**
 * One thread or child process of an isolated task's pool (./pool.ts): started once, then given
 * runs (one or several at once). It says how it ended, in words an attempt's error can carry: an uncaught
 * exception or unhandled rejection, an exit, a signal (kill -9, a native crash), running out of
 * memory, or the executor ending it (a handler that ignored its aborted signal, a recycle).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import type { FromIsolate, ToIsolate } from './isolate-protocol.js';

/** Where an isolated task runs. */
export type IsolateIn = 'thread' | 'process';

/** Why a thread or process was ended or replaced (the `cause` label of the restarts metric). */
export type EndCause = 'crash' | 'exit' | 'oom' | 'killed' | 'abandoned' | 'recycled' | 'memory' | 'start' | 'closed';

/** How a member ended: the cause and a sentence for the attempt's error. */
export interface Ending {
  cause: EndCause;
  message: string;
}

export interface MemberSpec {
  in: IsolateIn;
  /** The module's URL (file:). */
  module: string;
  exportName?: string;
  task: string;
  /** The heap limit, in MB (a thread's resourceLimits.maxOldGenerationSizeMb, a process's --max-old-space-size). */
  memoryLimitMb?: number;
  startTimeoutMs: number;
}

// Run from source (the tests, `tsx`): the entry point is TypeScript, loaded through tsx's hooks.
const fromSource = import.meta.url.endsWith('.ts');
const ENTRY = new URL(fromSource ? './isolate-entry.ts' : './isolate-entry.js', import.meta.url);

/** Node options and, for a thread, the bootstrap that load the entry point from source. */
function sourceLoading(): { execArgv: string[]; threadCode: string } {
  const require = createRequire(import.meta.url);
  const tsx = pathToFileURL(require.resolve('tsx')).href;
  const api = pathToFileURL(join(dirname(require.resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  return {
    execArgv: ['--import', tsx],
    // (a thread does not take --import: it registers tsx's hooks itself, then loads the entry)
    threadCode: `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(ENTRY.href)}); })`,
  };
}

/** Lines of a child's stderr kept to say why it ended (V8's out-of-memory report is one). */
const STDERR_TAIL = 4096;

export class Member {
  /** Resolves once the module is loaded; rejects with why it could not start. */
  readonly ready: Promise<void>;
  /** Settles once it ended, with how. */
  readonly ended: Promise<Ending>;
  /** Runs it finished. */
  jobs = 0;
  /** Its memory after its last run (MB). */
  mb = 0;
  /** A process's CPU time so far (µs), from its last run. */
  cpuUs = 0;
  private thread: Thread | null = null;
  private child: ChildProcess | null = null;
  private endedBy: Ending | null = null;
  private crash: Ending | null = null;
  private stderrTail = '';
  private listener: ((m: FromIsolate) => void) | null = null;
  private isUp = false;
  private gone = false;

  constructor(readonly spec: MemberSpec) {
    let up!: () => void;
    let down!: (err: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      up = resolve;
      down = reject;
    });
    // (a rejection nobody awaits: the pool reads it when it needs it)
    this.ready.catch(() => undefined);
    let ended!: (e: Ending) => void;
    this.ended = new Promise<Ending>((resolve) => (ended = resolve));
    const timer = setTimeout(() => {
      this.end({ cause: 'start', message: `did not load ${spec.module} within ${spec.startTimeoutMs} ms` });
    }, spec.startTimeoutMs);
    timer.unref();
    const onMessage = (batch: FromIsolate | FromIsolate[]) => {
      if (Array.isArray(batch)) for (const m of batch) onOne(m);
      else onOne(batch);
    };
    const onOne = (m: FromIsolate) => {
      if (m.t === 'ready') {
        clearTimeout(timer);
        this.isUp = true;
        up();
      } else if (m.t === 'unready') {
        clearTimeout(timer);
        this.end({ cause: 'start', message: m.error.message });
      } else if (m.t === 'crash') {
        this.crash = { cause: 'crash', message: `${m.kind}: ${m.error.stack ?? m.error.message}` };
      } else this.listener?.(m);
    };
    const onExit = (how: Ending) => {
      clearTimeout(timer);
      this.gone = true;
      const ending = this.endedBy ?? how;
      if (!this.isUp) down(new Error(`the ${spec.in} of task "${spec.task}" could not start: ${ending.message}`));
      ended(ending);
    };
    const options = fromSource ? sourceLoading() : null;
    const limit = spec.memoryLimitMb;
    if (spec.in === 'thread') {
      const thread = options
        ? new Thread(options.threadCode, { eval: true, resourceLimits: limit ? { maxOldGenerationSizeMb: limit } : undefined })
        : new Thread(ENTRY, { resourceLimits: limit ? { maxOldGenerationSizeMb: limit } : undefined });
      this.thread = thread;
      thread.on('message', onMessage);
      thread.on('error', (err: Error & { code?: string }) => {
        this.crash =
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? { cause: 'oom', message: `ran out of memory (its limit: ${limit ?? 'the default'} MB of heap)` }
            : { cause: 'crash', message: `uncaught exception or unhandled rejection: ${err.stack ?? err.message}` };
      });
      thread.on('exit', (code) => onExit(this.crash ?? { cause: 'exit', message: `exited with code ${code}` }));
    } else {
      const child = fork(fileURLToPath(ENTRY), [], {
        execArgv: [...(options?.execArgv ?? []), ...(limit ? [`--max-old-space-size=${limit}`] : [])],
        serialization: 'advanced',
        stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      });
      this.child = child;
      child.on('message', (m) => onMessage(m as FromIsolate[]));
      child.stderr?.on('data', (chunk: Buffer) => {
        process.stderr.write(chunk);
        this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_TAIL);
      });
      child.on('error', (err) => {
        // (it could not be started, or a message could not be sent: the process is ended)
        this.crash ??= { cause: 'start', message: err.message };
        child.kill('SIGKILL');
      });
      child.on('exit', (code, signal) => onExit(this.crash ?? this.processEnding(code, signal)));
    }
  }

  /** How a child process ended that said nothing before (no crash message). */
  private processEnding(code: number | null, signal: NodeJS.Signals | null): Ending {
    if (/heap out of memory|Reached heap limit/.test(this.stderrTail)) {
      return { cause: 'oom', message: `ran out of memory (its limit: ${this.spec.memoryLimitMb ?? 'the default'} MB of heap)` };
    }
    if (signal === 'SIGKILL') {
      return { cause: 'killed', message: 'was killed (SIGKILL: by the system, e.g. its out-of-memory killer, or an operator)' };
    }
    if (signal) return { cause: 'crash', message: `ended by signal ${signal} (a native crash, or process.abort())` };
    return { cause: 'exit', message: `exited with code ${code}` };
  }

  /** The process id (a child process's; the executor's own for a thread). */
  get pid(): number {
    return this.child?.pid ?? process.pid;
  }

  /** Whether its module loaded (it takes runs). */
  get up(): boolean {
    return this.isUp && !this.gone;
  }

  /** Whether it ended. */
  get dead(): boolean {
    return this.gone;
  }

  /** Starts loading the task's module. */
  init(): void {
    this.send({ t: 'init', module: this.spec.module, exportName: this.spec.exportName, task: this.spec.task });
  }

  /** Where its messages go (the pool's router: each names its run). */
  onMessage(fn: ((m: FromIsolate) => void) | null): void {
    this.listener = fn;
  }

  /**
   * Sends a message, with the others of this turn of the event loop in one batch (one crossing,
   * one wake-up of the other side, however many runs start or calls are answered). `refused`
   * hears it when the message cannot be cloned; the others of its batch go on.
   */
  send(m: ToIsolate, refused?: (err: Error) => void): void {
    if (this.gone) return;
    this.outbox.push(m);
    this.refusals.push(refused);
    if (this.outbox.length === 1) setImmediate(this.flush);
  }

  private readonly outbox: ToIsolate[] = [];
  private readonly refusals: Array<((err: Error) => void) | undefined> = [];
  private readonly flush = (): void => {
    const batch = this.outbox.splice(0);
    const refusals = this.refusals.splice(0);
    if (this.gone) return;
    try {
      this.post(batch);
    } catch {
      // (one of them cannot be cloned: each alone, so that only that one is refused)
      batch.forEach((m, i) => {
        try {
          this.post([m]);
        } catch (err) {
          refusals[i]?.(err as Error);
        }
      });
    }
  };

  private post(batch: ToIsolate[]): void {
    if (this.thread) this.thread.postMessage(batch);
    else if (this.child?.connected) this.child.send(batch);
  }

  /** Ends it at once (terminate, SIGKILL), for `ending`'s reason. */
  end(ending: Ending): void {
    if (this.gone || this.endedBy) return;
    this.endedBy = ending;
    if (this.thread) void this.thread.terminate();
    else this.child?.kill('SIGKILL');
  }
}
