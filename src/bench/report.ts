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
  /**
   * fairness: the same tenants without the flood (the light tenants' waits alone, the backlog's
   * rate alone), and the verdict on the two. Absent for the other workloads.
   */
  baseline?: { p50Ms: number | null; p99Ms: number | null; jobsPerSec: number };
  verdict?: FairnessVerdict;
}

/** The fairness verdict, as `npm run bench` gives it (benchmarks/report.ts). */
export interface FairnessVerdict {
  /** Light tenants' p99 beside the flood over their p99 alone (fair: at most {@link FAIR_WAIT_RATIO}). */
  waitRatio: number | null;
  /** The heavy tenant's rate beside the light tenants over its rate alone (fair: at least {@link FAIR_RATE_SHARE}). */
  rateShare: number | null;
  fair: boolean | null;
  text: string;
}

/** The light tenants wait at most this many times as long beside the flood as alone. */
export const FAIR_WAIT_RATIO = 2;
/** The heavy tenant drains at least this share of its rate alone beside the light tenants. */
export const FAIR_RATE_SHARE = 0.95;

/** The verdict on a fairness run and its baseline. */
export function fairnessVerdict(
  system: string,
  flood: { p99Ms: number | null; jobsPerSec: number },
  alone: { p99Ms: number | null; jobsPerSec: number },
): FairnessVerdict {
  const waitRatio = flood.p99Ms !== null && alone.p99Ms ? flood.p99Ms / alone.p99Ms : null;
  const rateShare = alone.jobsPerSec > 0 ? flood.jobsPerSec / alone.jobsPerSec : null;
  const fair = waitRatio === null || rateShare === null ? null : waitRatio <= FAIR_WAIT_RATIO && rateShare >= FAIR_RATE_SHARE;
  const wait =
    waitRatio === null
      ? 'light tenants: no wait measured'
      : `light tenants wait ${ms(flood.p99Ms)} ms p99 beside the flood, ${ms(alone.p99Ms)} ms alone (${waitRatio.toFixed(2)}×, fair at ≤ ${FAIR_WAIT_RATIO}×)`;
  const rate =
    rateShare === null
      ? 'the heavy tenant: no rate measured'
      : `the heavy tenant drains at ${(rateShare * 100).toFixed(1)}% of its rate alone (fair at ≥ ${FAIR_RATE_SHARE * 100}%)`;
  const word = fair === null ? 'not measured' : fair ? 'FAIR' : 'NOT FAIR';
  return { waitRatio, rateShare, fair, text: `fairness on ${system}: ${word}: ${wait}; ${rate}` };
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
    ...(r.baseline ? fairnessOf(res, r.baseline, r.system) : {}),
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

function fairnessOf(flood: RunRecord['result'], alone: NonNullable<RunRecord['baseline']>, system: string) {
  const baseline = { p50Ms: finite(alone.extra.p50Ms), p99Ms: finite(alone.extra.p99Ms), jobsPerSec: alone.jobsPerSec };
  return {
    baseline,
    verdict: fairnessVerdict(system, { p99Ms: finite(flood.extra.p99Ms), jobsPerSec: flood.jobsPerSec }, baseline),
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
      rep.runs.flatMap((r) => [
        [
          r.workload,
          r.system,
          fmt(r.jobsPerSec),
          ms(r.p50Ms),
          ms(r.p99Ms),
          num(r.redisCpuUsPerJob),
          num(r.redisCommandsPerJob),
          num(r.clientCpuUsPerJob),
          [r.capped ? 'capped' : '', r.duplicates ? `${r.duplicates} DUPLICATES` : ''].filter(Boolean).join(' '),
        ],
        ...(r.baseline
          ? [[' alone', r.system, fmt(r.baseline.jobsPerSec), ms(r.baseline.p50Ms), ms(r.baseline.p99Ms), '', '', '', '']]
          : []),
      ]),
    ),
  );
  out.push('  (p50/p99: latency = pickup, fairness = light tenant wait beside a flood, alone = without it, periodic = lateness)');
  for (const r of rep.runs) if (r.verdict) out.push(r.verdict.text);
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

/** What a figure of the report is, and so how finely it is given in `--json`. */
export type Unit = 'jobs/s' | 'ms' | 'µs' | 'ratio' | '%' | 's' | 'count';

/** Decimal places by unit: jobs/s and counts whole, ms to 0.01, µs and % to 0.1, ratios to 0.01, seconds to 0.01. */
const PLACES: Record<Unit, number> = { 'jobs/s': 0, count: 0, ms: 2, µs: 1, '%': 1, ratio: 2, s: 2 };

/** `v` rounded to what a figure of `unit` means (null stays null). */
export function round<T extends number | null>(unit: Unit, v: T): T {
  if (v === null || !Number.isFinite(v)) return v;
  const f = 10 ** PLACES[unit];
  return (Math.round((v as number) * f) / f) as T;
}

/** The report with every figure rounded to its unit ({@link round}), as `--json` prints it. */
export function roundedReport(rep: BenchReport): BenchReport {
  const runs = rep.runs.map(
    (r): RunReport => ({
      ...r,
      seconds: round('s', r.seconds),
      jobsPerSec: round('jobs/s', r.jobsPerSec),
      p50Ms: round('ms', r.p50Ms),
      p99Ms: round('ms', r.p99Ms),
      maxJobsPerSec: round('jobs/s', r.maxJobsPerSec),
      redisCpuUsPerJob: round('µs', r.redisCpuUsPerJob),
      redisCommandsPerJob: round('ratio', r.redisCommandsPerJob),
      redisBusyPct: round('%', r.redisBusyPct),
      clientCpuUsPerJob: round('µs', r.clientCpuUsPerJob),
      primaries: r.primaries.map((p) => ({ ...p, cpuUs: round('count', p.cpuUs), busyPct: round('%', p.busyPct) })),
      balance: round('ratio', r.balance),
      ...(r.occurrences
        ? {
            occurrences: {
              ...r.occurrences,
              redisCommandsPer: round('ratio', r.occurrences.redisCommandsPer),
              redisCpuUsPer: round('µs', r.occurrences.redisCpuUsPer),
            },
          }
        : {}),
      ...(r.baseline
        ? {
            baseline: {
              p50Ms: round('ms', r.baseline.p50Ms),
              p99Ms: round('ms', r.baseline.p99Ms),
              jobsPerSec: round('jobs/s', r.baseline.jobsPerSec),
            },
          }
        : {}),
      ...(r.verdict
        ? {
            verdict: {
              ...r.verdict,
              waitRatio: round('ratio', r.verdict.waitRatio),
              rateShare: round('ratio', r.verdict.rateShare),
            },
          }
        : {}),
    }),
  );
  return {
    ...rep,
    server: { ...rep.server, pingMs: round('ms', rep.server.pingMs) },
    runs,
    comparison: rep.comparison.map((c) => ({ ...c, jobsPerSec: round('ratio', c.jobsPerSec), p99Ms: round('ratio', c.p99Ms) })),
    sizing: rep.sizing
      ? {
          ...rep.sizing,
          jobsPerSec: round('jobs/s', rep.sizing.jobsPerSec),
          redisCorePct: round('%', rep.sizing.redisCorePct),
          keepUpJobsPerSec: round('jobs/s', rep.sizing.keepUpJobsPerSec),
        }
      : null,
  };
}
