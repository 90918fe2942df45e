/** What every workload gets and gives back. */
import {
  addDeltas,
  cpuSince,
  type InfoSource,
  type RedisDelta,
  type RedisSample,
  RssPeak,
  redisDelta,
  sampleRedis,
} from '../measure.js';
import { type Endpoint, PADDING, type SystemAdapter, type SystemName } from '../peers/types.js';

/** How to start an executor process (drain with `processes`): a script and its arguments; see executor-child.ts. */
export interface ExecutorEntry {
  script: string;
  args: string[];
}

export interface RunContext {
  system: SystemName;
  /** Where the system connects. */
  at: Endpoint;
  queue: string;
  adapter: SystemAdapter;
  /** A separate connection for INFO sampling. */
  admin: InfoSource;
  quick: boolean;
  /** The payloads' padding (default: PADDING, about 100 bytes a payload). */
  padding?: string;
  /** Each handler sleeps this long (default 0: a no-op). */
  handlerMs?: number;
  /** The executor processes' entry point (drain with processes > 0). */
  executorEntry?: ExecutorEntry;
  /** Told the jobs run so far, each time one more ran (progress; executors in child processes report at their end). */
  onJobs?: (done: number) => void;
}

/** The padding of the context's payloads. */
export const paddingOf = (ctx: RunContext) => ctx.padding ?? PADDING;

/** Sleeps the context's handler time, or returns at once for a no-op handler. */
export const handlerWork = (ms: number | undefined): Promise<void> | undefined =>
  ms ? new Promise((r) => setTimeout(r, ms)) : undefined;

/** One measured run of one case on one system. */
export interface RunResult {
  jobs: number;
  seconds: number;
  jobsPerSec: number;
  redis: RedisDelta;
  nodeCpuUs: number;
  peakRssBytes: number;
  /** Exactly-once check: jobs expected to run (or be stored), distinct ones seen, and repeats. */
  expected: number;
  unique: number;
  duplicates: number;
  /** The run hit its time cap before all jobs ran (the rest were left waiting, not lost). */
  capped: boolean;
  extra: Record<string, number | null>;
  /** Percentiles 0..100 of the light-tenant waits (fairness) or pickup latency (latency), in ms. */
  dist?: number[];
}

/** Counts runs per job id, to prove every job ran exactly once. */
export class Seen {
  private readonly ids = new Set<string>();
  duplicates = 0;
  /** @param onJobs told the count of distinct ids after each new one (progress). */
  constructor(private readonly onJobs?: (done: number) => void) {}
  add(id: string): void {
    if (this.ids.has(id)) this.duplicates++;
    else {
      this.ids.add(id);
      this.onJobs?.(this.ids.size);
    }
  }
  addAll(ids: Iterable<string>): void {
    for (const id of ids) this.add(id);
  }
  get size(): number {
    return this.ids.size;
  }
  /** What a result reports of the runs: the distinct jobs, and the runs of a job seen before. */
  counts(): { unique: number; duplicates: number } {
    return { unique: this.ids.size, duplicates: this.duplicates };
  }
}

/** Brackets a measured phase: Redis counters, this process's CPU, wall time and peak RSS. */
export class Phase {
  private startSample!: RedisSample;
  private cpu!: NodeJS.CpuUsage;
  private t0 = 0;
  private rss = new RssPeak();
  constructor(private readonly admin: InfoSource) {}
  async begin(): Promise<this> {
    this.startSample = await sampleRedis(this.admin);
    this.cpu = process.cpuUsage();
    this.t0 = performance.now();
    return this;
  }
  /** Seconds since begin (the clock of the measured phase). */
  elapsed(): number {
    return (performance.now() - this.t0) / 1000;
  }
  async end(): Promise<{ redis: RedisDelta; nodeCpuUs: number; peakRssBytes: number }> {
    const nodeCpuUs = cpuSince(this.cpu);
    const redis = redisDelta(this.startSample, await sampleRedis(this.admin));
    return { redis, nodeCpuUs, peakRssBytes: this.rss.stop() };
  }
}

export { addDeltas };

/** Group of the i-th job when jobs are spread over `groups` tenants. */
export const groupOf = (i: number, groups: number) => `t${i % groups}`;

/** Resolves when `cond()` holds (checked every `everyMs`), or false after `timeoutMs`. */
export async function until(cond: () => boolean, timeoutMs: number, everyMs = 2): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return true;
}
