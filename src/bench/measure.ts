/**
 * Measurement helpers: Redis INFO parsing (CPU and command statistics), Node CPU and RSS
 * sampling, and the small statistics the report needs (median, percentiles, Jain's index).
 */
import { parseInfo } from '../redis/info.js';

export { parseInfo };

/** Where INFO is read from (a BenchStore). */
export interface InfoSource {
  info(): Promise<string>;
}

/** One reading of the server's counters. */
export interface RedisSample {
  /** used_cpu_sys + used_cpu_user, in microseconds. */
  cpuUs: number;
  /** Of a SummedInfo: each server's CPU µs (its `part<i>_cpu_us` fields). */
  partsCpuUs?: number[];
  /** Calls per command name (lower case), from INFO commandstats. */
  calls: Record<string, number>;
  at: number;
}

/** Commands the harness itself sends (INFO sampling, FLUSHALL, CONFIG) or connection setup; left out of per-job counts. */
const HARNESS_COMMANDS = new Set([
  'info',
  'config|resetstat',
  'config',
  'flushall',
  'client|setname',
  'client',
  'select',
  'hello',
  'ping',
  'command',
  'command|docs',
  'scan',
  'unlink',
]);
const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro']);

/** The CPU time the server has used (used_cpu_sys + used_cpu_user of a parsed INFO), in µs. */
export function cpuUsOf(info: Record<string, string>): number {
  return (Number(info.used_cpu_sys) + Number(info.used_cpu_user)) * 1e6;
}

export async function sampleRedis(admin: InfoSource): Promise<RedisSample> {
  const info = parseInfo(await admin.info());
  const cpuUs = cpuUsOf(info);
  const calls: Record<string, number> = {};
  for (const [k, v] of Object.entries(info)) {
    if (!k.startsWith('cmdstat_')) continue;
    const m = /calls=(\d+)/.exec(v);
    if (m) calls[k.slice(8)] = Number(m[1]);
  }
  const parts = Object.keys(info).filter((k) => /^part\d+_cpu_us$/.test(k));
  const partsCpuUs = parts.length ? parts.map((_, i) => Number(info[`part${i}_cpu_us`])) : undefined;
  return { cpuUs, partsCpuUs, calls, at: performance.now() };
}

/** What the server did between two samples. */
export interface RedisDelta {
  cpuUs: number;
  /** Of a SummedInfo: each server's CPU µs. */
  partsCpuUs?: number[];
  /** Every command executed, including those run inside scripts, minus the harness's own. */
  commands: number;
  /** Script invocations (EVALSHA/EVAL/FCALL). */
  scriptCalls: number;
  /** Commands per name, for the report's breakdown. */
  byCommand: Record<string, number>;
  ms: number;
}

export function redisDelta(a: RedisSample, b: RedisSample): RedisDelta {
  let commands = 0;
  let scriptCalls = 0;
  const byCommand: Record<string, number> = {};
  for (const [name, n] of Object.entries(b.calls)) {
    const d = n - (a.calls[name] ?? 0);
    if (d <= 0 || HARNESS_COMMANDS.has(name)) continue;
    byCommand[name] = d;
    commands += d;
    if (SCRIPT_COMMANDS.has(name)) scriptCalls += d;
  }
  // (a server that hides INFO commandstats, as some managed services do: no count, rather than 0)
  if (Object.keys(b.calls).length === 0) commands = scriptCalls = Number.NaN;
  const partsCpuUs = b.partsCpuUs?.map((x, i) => x - (a.partsCpuUs?.[i] ?? 0));
  return { cpuUs: b.cpuUs - a.cpuUs, partsCpuUs, commands, scriptCalls, byCommand, ms: b.at - a.at };
}

export function addDeltas(a: RedisDelta, b: RedisDelta): RedisDelta {
  const byCommand = { ...a.byCommand };
  for (const [k, v] of Object.entries(b.byCommand)) byCommand[k] = (byCommand[k] ?? 0) + v;
  return {
    cpuUs: a.cpuUs + b.cpuUs,
    commands: a.commands + b.commands,
    scriptCalls: a.scriptCalls + b.scriptCalls,
    byCommand,
    ms: a.ms + b.ms,
  };
}

/** Samples this process's RSS every 50 ms and keeps the peak. */
export class RssPeak {
  private peak = process.memoryUsage.rss();
  private readonly timer: NodeJS.Timeout;
  constructor() {
    this.timer = setInterval(() => this.sample(), 50);
    this.timer.unref();
  }
  sample(): void {
    const r = process.memoryUsage.rss();
    if (r > this.peak) this.peak = r;
  }
  stop(): number {
    this.sample();
    clearInterval(this.timer);
    return this.peak;
  }
}

/** CPU time this process used since `from` (a process.cpuUsage() reading), in microseconds. */
export function cpuSince(from: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(from);
  return d.user + d.system;
}

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of a sorted array. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function percentiles(xs: number[], ps: number[]): number[] {
  const s = Float64Array.from(xs).sort();
  return ps.map((p) => percentileSorted(s, p));
}

/** Jain's fairness index of allocations x: (Σx)² / (n·Σx²); 1 is perfectly even, 1/n is one takes all. */
export function jain(xs: number[]): number {
  if (xs.length === 0) return NaN;
  let s = 0;
  let s2 = 0;
  for (const x of xs) {
    s += x;
    s2 += x * x;
  }
  return s2 === 0 ? 1 : (s * s) / (xs.length * s2);
}

/** A wall clock with sub-millisecond resolution that is comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The INFO of several servers (a Cluster's primaries) as one: CPU and command calls summed, so
 * that a phase measured on it counts the work of all of them; each server's CPU is kept too
 * (fields `part<i>_cpu_us`, read into RedisSample.partsCpuUs).
 */
export class SummedInfo implements InfoSource {
  constructor(private readonly sources: InfoSource[]) {}
  async info(): Promise<string> {
    const sum = new Map<string, number>();
    for (const [i, text] of (await Promise.all(this.sources.map((s) => s.info()))).entries()) {
      const info = parseInfo(text);
      sum.set(`part${i}_cpu_us`, cpuUsOf(info));
      for (const [k, v] of Object.entries(info)) {
        if (k === 'used_cpu_sys' || k === 'used_cpu_user') sum.set(k, (sum.get(k) ?? 0) + Number(v));
        const m = k.startsWith('cmdstat_') ? /calls=(\d+)/.exec(v) : null;
        if (m) sum.set(k, (sum.get(k) ?? 0) + Number(m[1]));
      }
    }
    return [...sum].map(([k, v]) => (k.startsWith('cmdstat_') ? `${k}:calls=${v}` : `${k}:${v}`)).join('\r\n');
  }
}
