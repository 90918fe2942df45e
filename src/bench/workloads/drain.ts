/**
 * Drain: N no-op jobs are put in the queue in bulk (batches of 1,000), then executors (in this
 * process, or in forked processes) run them all. The measured phase is the drain; the fill is
 * measured too, so that Redis CPU over a job's whole life (submit + take + complete) is known.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { type JobIn, payload } from '../peers/types.js';
import { addDeltas, groupOf, handlerWork, Phase, paddingOf, type RunContext, type RunResult, Seen, until } from './common.js';

export interface DrainParams {
  jobs: number;
  concurrency: number;
  groups: number;
  /** Executor processes: 0 runs the executor in this process. */
  processes: number;
  /** Longest drain, in ms, before the run is cut short (reported as capped). */
  capMs: number;
  /** Rota only: the no-op handler isolated in a pool of threads or processes (in this process's executor). */
  isolate?: 'thread' | 'process';
}

/** Submits `jobs` jobs in batches, over `groups` groups (t0, t1, ...) or all in the one group named. */
export async function fill(
  ctx: RunContext,
  jobs: number,
  groups: number | string,
  batch = 1000,
  data = (k: number) => payload(k, paddingOf(ctx)),
): Promise<void> {
  const group = (k: number) => (typeof groups === 'string' ? groups : groupOf(k, groups));
  for (let i = 0; i < jobs; i += batch) {
    const b: JobIn[] = [];
    for (let k = i; k < Math.min(jobs, i + batch); k++) b.push({ group: group(k), data: data(k) });
    await ctx.adapter.submitBulk(b);
  }
}

interface Child {
  proc: ChildProcess;
  n: number;
  done?: ExecutorDone;
}

/** What an executor process (./executor-child.ts) reports when it stops. */
interface ExecutorDone {
  ids: string[];
  cpuUs: number;
  peakRssBytes: number;
}

/** The messages an executor process sends. */
type ExecutorMessage = { type: 'ready' } | { type: 'progress'; n: number } | ({ type: 'done' } & ExecutorDone);

/**
 * Starts an executor process from the context's entry point, with this process's Node options (so
 * that a run from source loads TypeScript the same way).
 */
function forkExecutor(ctx: RunContext, concurrency: number): Promise<Child> {
  const entry = ctx.executorEntry;
  if (!entry) throw new Error('a drain with executor processes needs an executor entry point');
  const proc = fork(entry.script, entry.args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const child: Child = { proc, n: 0 };
  return new Promise((resolve, reject) => {
    proc.on('message', (m: ExecutorMessage) => {
      if (m.type === 'ready') resolve(child);
      else if (m.type === 'progress') child.n = m.n;
      else if (m.type === 'done') child.done = m;
    });
    proc.once('error', reject);
    proc.send({ system: ctx.system, at: ctx.at, queue: ctx.queue, concurrency, handlerMs: ctx.handlerMs ?? 0 });
  });
}

export async function runDrain(ctx: RunContext, p: DrainParams): Promise<RunResult> {
  const fillPhase = await new Phase(ctx.admin).begin();
  await fill(ctx, p.jobs, p.groups);
  const filled = await fillPhase.end();

  const seen = new Seen(ctx.onJobs);
  let seconds: number;
  let capped: boolean;
  let nodeCpuUs = 0;
  let peakRssBytes = 0;
  let phase: Phase;
  let m: Awaited<ReturnType<Phase['end']>>;
  if (p.processes === 0) {
    let n = 0;
    const start = () =>
      ctx.adapter.startExecutor({
        concurrency: p.concurrency,
        handler: (id) => {
          seen.add(id);
          n++;
          return handlerWork(ctx.handlerMs);
        },
        isolate: p.isolate,
      });
    // (an isolated pool starts its threads or processes before the measured phase: the start-up is paid once)
    const early = p.isolate ? await start() : null;
    phase = await new Phase(ctx.admin).begin();
    const childCpuBefore = early?.childCpuUs?.() ?? 0;
    const exec = early ?? (await start());
    capped = !(await until(() => n >= p.jobs, p.capMs));
    seconds = phase.elapsed();
    const childCpuUs = (exec.childCpuUs?.() ?? 0) - childCpuBefore;
    await exec.close();
    m = await phase.end();
    nodeCpuUs = m.nodeCpuUs + childCpuUs;
    peakRssBytes = m.peakRssBytes;
  } else {
    const children = await Promise.all(Array.from({ length: p.processes }, () => forkExecutor(ctx, p.concurrency)));
    phase = await new Phase(ctx.admin).begin();
    for (const c of children) c.proc.send({ type: 'go' });
    const total = () => children.reduce((s, c) => s + c.n, 0);
    capped = !(await until(() => total() >= p.jobs, p.capMs));
    seconds = phase.elapsed();
    for (const c of children) c.proc.send({ type: 'stop' });
    await until(() => children.every((c) => c.done), 30_000, 10);
    m = await phase.end();
    for (const c of children) {
      seen.addAll(c.done?.ids ?? []);
      nodeCpuUs += c.done?.cpuUs ?? 0;
      peakRssBytes = Math.max(peakRssBytes, c.done?.peakRssBytes ?? 0);
    }
  }
  const ran = seen.size + seen.duplicates;
  const lifecycle = addDeltas(filled.redis, m.redis);
  return {
    jobs: ran,
    seconds,
    jobsPerSec: ran / seconds,
    redis: m.redis,
    nodeCpuUs,
    peakRssBytes,
    expected: p.jobs,
    ...seen.counts(),
    capped,
    extra: {
      fillJobsPerSec: p.jobs / (filled.redis.ms / 1000),
      lifecycleRedisCpuUsPerJob: lifecycle.cpuUs / p.jobs,
      lifecycleRedisCommandsPerJob: lifecycle.commands / p.jobs,
      lifecycleScriptCallsPerJob: lifecycle.scriptCalls / p.jobs,
    },
  };
}
