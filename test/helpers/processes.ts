/**
 * Runs Node scripts as child processes for fault tests: start, signal, kill -9, wait for messages.
 */
import { type ChildProcess, fork, type Serializable } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/**
 * Node options that run a TypeScript entry point from source (tsx's loader, in the same process,
 * so signals and kill -9 reach the script itself). Child processes of tests and benchmarks use
 * them, so that they never run a stale build.
 */
export const TS_EXEC_ARGV: readonly string[] = ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];

/** A message a child sent over IPC: an object whose fields a test reads. */
export type ChildMessage = { readonly [field: string]: unknown };

/** A child Node process, running a TypeScript (or JavaScript) script, that talks to the test over IPC. */
export class NodeProcess {
  readonly child: ChildProcess;
  private readonly messages: ChildMessage[] = [];
  private readonly waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;

  constructor(script: string, args: string[] = [], env: NodeJS.ProcessEnv = {}) {
    this.child = fork(script, args, {
      execArgv: [...TS_EXEC_ARGV],
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m) => {
      this.messages.push(m as ChildMessage);
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Resolves with the first message (received so far or later) that satisfies `pred`. */
  async waitFor<T = unknown>(pred: (m: ChildMessage) => unknown, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(pred);
      if (found !== undefined) return found as T;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`child ${this.pid} sent no matching message in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** All messages received so far. */
  received(): ChildMessage[] {
    return [...this.messages];
  }

  send(message: Serializable): void {
    this.child.send(message);
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  /** kill -9, and wait until the process is gone. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}
