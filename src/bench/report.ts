/**
 * The report of `rota bench`: one JSON object (`--json`, documented in docs/cli.md, "rota bench")
 * and its text form: a table of the runs, per-primary CPU on a Cluster, the sizing line and, with
 * `--compare`, one table of Rota against each peer.
 */
import type { BenchSizes, RunRecord, Workload } from './plan.js';

/** The report's format version (bumped when a field changes meaning or goes). */
export const REPORT_VERSION = 1;

/** The server the bench ran on. */
export interface ServerReport {
  address: string;
  version: string;
  role: string;
  maxmemoryPolicy: string;
  /** A redis-server that rota bench started (and stopped) itself. */
  private: boolean;
  cluster: boolean;
  primaries: number;
  /** Median PING round trip, ms. */
  pingMs: number;
}

/** One run in the report; a figure the server hides (INFO commandstats or CPU) is null. */
export interface RunReport {
  workload: Workload;
  system: string;
  jobs: number;
  seconds: number;
  /** ingest: accepted; drain: run; latency: offered (half the calibrated maximum); fairness: the flood's; periodic: started. */
  jobsPerSec: number;
  /** latency: pickup (submit → handler start); fairness: the light tenants' wait; periodic: lateness. Else null. */
  p50Ms: number | null;
  p99Ms: number | null;
  /** latency: the calibrated maximum rate. */
  maxJobsPerSec: number | null;
  redisCpuUsPerJob: number | null;
  redisCommandsPerJob: number | null;
  /** Redis CPU in the measured phase over its length, % of one core (on a Cluster: all primaries' together). */
  redisBusyPct: number | null;
  /** The bench's own CPU per job (producer and executors in this machine's processes). */
  clientCpuUsPerJob: number | null;
  /** The run stopped at its time cap before every job ran. */
  capped: boolean;
  /** Jobs run more than once (should be 0). */
  duplicates: number;
  /** Redis CPU of each primary in the measured phase (as redisBusyPct), and its share of one core. */
  primaries: Array<{ address: string; cpuUs: number | null; busyPct: number | null }>;
  /** Busiest primary's CPU over the idlest's (1 on a single server). */
  balance: number | null;
  /**
   * periodic: every occurrence the scheduler submitted during the phase (past capacity, the next
   * occurrences' too), and Redis's commands and CPU over those. Absent for the other workloads.
   */
  occurrences?: { submitted: number; redisCommandsPer: number | null; redisCpuUsPer: number | null };
}

export interface SizingReport {
  jobsPerSec: number;
  redisCorePct: number | null;
  handlerMs: number;
  executors: number;
  concurrency: number;
  keepUpJobsPerSec: number;
  text: string;
}

/** The whole report (`--json`). */
export interface BenchReport {
  version: number;
  server: ServerReport;
  settings: BenchSizes & { shards: number; workloads: Workload[]; systems: string[] };
  namespace: string;
  warnings: string[];
  runs: RunReport[];
  /** Per workload and peer: Rota's figure over the peer's (jobs/s: above 1 is Rota faster; p99: below 1 is Rota quicker). */
  comparison: Array<{ workload: Workload; peer: string; jobsPerSec: number | null; p99Ms: number | null }>;
  sizing: SizingReport | null;
  /** Keys of the bench's namespace left on the server at the end (0 unless the cleanup failed). */
  keysLeft: number;
}

const finite = (x: number | null | undefined): number | null => (x != null && Number.isFinite(x) ? x : null);

/** The report's entry for one run record. */
export function runReport(r: RunRecord): RunReport {
  const res = r.result;
  const jobs = Math.max(1, res.jobs);
  // Each primary's CPU in the measured phase.
  const phaseMs = res.redis.ms || res.seconds * 1000;
  const cpu = res.redis.partsCpuUs ?? [res.redis.cpuUs];
  return {
    workload: r.workload,
    system: r.system,
    jobs: res.jobs,
    seconds: res.seconds,
    jobsPerSec: res.jobsPerSec,
    p50Ms: finite(res.extra.p50Ms),
    p99Ms: finite(res.extra.p99Ms),
    maxJobsPerSec: finite(r.maxJobsPerSec),
    redisCpuUsPerJob: finite(res.redis.cpuUs / jobs),
    redisCommandsPerJob: finite(res.redis.commands / jobs),
    redisBusyPct: finite((res.redis.cpuUs / 1000 / (res.redis.ms || res.seconds * 1000)) * 100),
    clientCpuUsPerJob: finite(res.nodeCpuUs / jobs),
    capped: res.capped,
    duplicates: res.duplicates,
    primaries: r.primaries.map((address, i) => ({
      address,
      cpuUs: finite(cpu[i]),
      busyPct: finite((cpu[i] / 1000 / phaseMs) * 100),
    })),
    balance: cpu.length > 1 ? finite(Math.max(...cpu) / Math.max(1, Math.min(...cpu))) : 1,
    ...(res.extra.submitted !== undefined
      ? {
          occurrences: {
            submitted: Number(res.extra.submitted),
            redisCommandsPer: finite(res.extra.commandsPerOccurrence),
            redisCpuUsPer: finite(res.extra.cpuUsPerOccurrence),
          },
        }
      : {}),
  };
}

/** The sizing line from Rota's drain run (null without one). */
export function sizing(runs: RunReport[], s: BenchSizes): SizingReport | null {
  const drain = runs.find((r) => r.workload === 'drain' && r.system === 'rota');
  if (!drain) return null;
  // (the busiest primary of a Cluster: the one that runs out first)
  const busy = drain.primaries.map((p) => p.busyPct);
  const core =
    drain.primaries.length === 1 ? drain.redisBusyPct : busy.some((b) => b === null) ? null : Math.max(...(busy as number[]));
  const x = drain.jobsPerSec;
  // Executors keep up with at most P × C / H jobs a second (Little's law), and never more than the server gives.
  const r = s.handlerMs > 0 ? Math.min(x, (s.executors * s.concurrency * 1000) / s.handlerMs) : x;
  const at = core === null ? ' (its CPU is hidden)' : ` at ${core.toFixed(0)} % of one core`;
  const text = `this server sustains about ${fmt(x)} jobs/s${at}; with ${s.handlerMs} ms handlers, ${s.executors} executor${s.executors === 1 ? '' : 's'} of concurrency ${s.concurrency} keep up with ${fmt(r)} jobs/s`;
  return {
    jobsPerSec: x,
    redisCorePct: core,
    handlerMs: s.handlerMs,
    executors: s.executors,
    concurrency: s.concurrency,
    keepUpJobsPerSec: r,
    text,
  };
}

/** Rota's figures over each peer's, per workload. */
export function comparison(runs: RunReport[]): BenchReport['comparison'] {
  const out: BenchReport['comparison'] = [];
  for (const rota of runs.filter((r) => r.system === 'rota')) {
    for (const peer of runs.filter((r) => r.system !== 'rota' && r.workload === rota.workload)) {
      const ratio = (a: number | null, b: number | null) => (a !== null && b ? a / b : null);
      out.push({
        workload: rota.workload,
        peer: peer.system,
        jobsPerSec: ratio(rota.jobsPerSec, peer.jobsPerSec),
        p99Ms: ratio(rota.p99Ms, peer.p99Ms),
      });
    }
  }
  return out;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const num = (x: number | null, digits = 1) => (x === null ? 'hidden' : x.toFixed(digits));
const ms = (x: number | null) => (x === null ? '-' : x.toFixed(2));

function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(head), ...rows.map(line)].map((l) => l.trimEnd()).join('\n');
}

/** The report as text. */
export function describeReport(rep: BenchReport): string {
  const s = rep.server;
  const out: string[] = [];
  out.push(
    `rota bench: Redis ${s.version} at ${s.address}${s.private ? ' (private server)' : ''}${s.cluster ? ` (Cluster, ${s.primaries} primaries)` : ''}, ping ${s.pingMs.toFixed(2)} ms`,
  );
  for (const w of rep.warnings) out.push(`warning: ${w}`);
  out.push('');
  out.push(
    table(
      ['workload', 'system', 'jobs/s', 'p50 ms', 'p99 ms', 'redis µs/job', 'cmds/job', 'client µs/job', ''],
      rep.runs.map((r) => [
        r.workload,
        r.system,
        fmt(r.jobsPerSec),
        ms(r.p50Ms),
        ms(r.p99Ms),
        num(r.redisCpuUsPerJob),
        num(r.redisCommandsPerJob),
        num(r.clientCpuUsPerJob),
        [r.capped ? 'capped' : '', r.duplicates ? `${r.duplicates} DUPLICATES` : ''].filter(Boolean).join(' '),
      ]),
    ),
  );
  out.push('  (p50/p99: latency = pickup, fairness = light tenant wait beside a flood, periodic = lateness)');
  if (rep.runs.some((r) => r.redisCpuUsPerJob === null || r.redisCommandsPerJob === null)) {
    out.push('  (hidden: this server does not show its CPU or INFO commandstats, as some managed services do)');
  }
  if (s.cluster) {
    out.push('');
    out.push('per primary (Redis CPU in the measured phase, share of one core; balance = busiest / idlest):');
    for (const r of rep.runs.filter((x) => x.system === 'rota')) {
      const each = r.primaries.map((p) => `${p.address} ${p.busyPct === null ? 'hidden' : `${p.busyPct.toFixed(0)} %`}`);
      out.push(`  ${r.workload.padEnd(9)} ${each.join('  ')}  balance ${num(r.balance, 2)}`);
    }
  }
  if (rep.comparison.length) {
    out.push('');
    const peers = [...new Set(rep.comparison.map((c) => c.peer))];
    const workloads = [...new Set(rep.comparison.map((c) => c.workload))];
    const rows: string[][] = [];
    for (const w of workloads) {
      const of = (sys: string) => rep.runs.find((r) => r.workload === w && r.system === sys);
      const ratio = (peer: string, k: 'jobsPerSec' | 'p99Ms') => {
        const v = rep.comparison.find((c) => c.workload === w && c.peer === peer)?.[k];
        return v == null ? '-' : `${v.toFixed(2)}×`;
      };
      rows.push([
        w,
        'jobs/s',
        fmt(of('rota')?.jobsPerSec ?? 0),
        ...peers.map((p) => fmt(of(p)?.jobsPerSec ?? 0)),
        ...peers.map((p) => ratio(p, 'jobsPerSec')),
      ]);
      if (of('rota')?.p99Ms != null) {
        rows.push([
          '',
          'p99 ms',
          ms(of('rota')?.p99Ms ?? null),
          ...peers.map((p) => ms(of(p)?.p99Ms ?? null)),
          ...peers.map((p) => ratio(p, 'p99Ms')),
        ]);
      }
    }
    out.push(table(['workload', 'metric', 'rota', ...peers, ...peers.map((p) => `rota/${p}`)], rows));
  }
  if (rep.sizing) {
    out.push('');
    out.push(`sizing: ${rep.sizing.text}`);
  }
  if (rep.keysLeft) out.push(`warning: ${rep.keysLeft} keys of ${rep.namespace} could not be removed`);
  return `${out.join('\n')}\n`;
}
