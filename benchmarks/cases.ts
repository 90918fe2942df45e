/** The benchmark cases, with their full and --quick sizes. */
import type { SystemName } from '../src/bench/peers/types.js';
import type { DrainParams } from '../src/bench/workloads/drain.js';
import type { FairnessParams } from '../src/bench/workloads/fairness.js';
import type { IngestParams } from '../src/bench/workloads/ingest.js';
import type { LatencyParams } from '../src/bench/workloads/latency.js';
import type { ClusterParams } from './workloads/cluster.js';
import type { DelayParams } from './workloads/delay.js';
import type { RateParams } from './workloads/rate.js';

/**
 * A case; `systems`: the only systems it runs on (a feature of those alone), default all. A
 * `cluster` case runs on a Redis Cluster of three primaries that the harness starts beside its
 * single server.
 */
export type CaseSpec = (
  | { name: string; kind: 'ingest'; params: IngestParams }
  | { name: string; kind: 'drain'; params: DrainParams }
  | { name: string; kind: 'latency'; params: Omit<LatencyParams, 'rate'>; loadPct: number }
  | { name: string; kind: 'fairness'; params: FairnessParams }
  | { name: string; kind: 'delay'; params: DelayParams }
  | { name: string; kind: 'rate'; params: RateParams }
  | { name: string; kind: 'cluster'; params: ClusterParams }
) & {
  systems?: readonly SystemName[];
  /** Measured runs when `--runs` is not given (full sizes; default 5). */
  runs?: number;
  /** Adjacent cases of one group run interleaved, round by round (their figures are compared). */
  interleave?: string;
};

export const CASE_NAMES = [
  'ingest-serial',
  'ingest-inflight',
  'ingest-bulk50',
  'ingest-bulk1000',
  'drain-c1',
  'drain-c10',
  'drain-c100',
  'drain-c100-2proc',
  'isolate-c100-inprocess',
  'isolate-c100-thread',
  'isolate-c100-process',
  'latency-10',
  'latency-50',
  'latency-80',
  'fairness-light',
  'fairness-noflood',
  'groups-1',
  'groups-1000',
  'groups-100000',
  'delay-10k',
  'rate-1000',
  'cluster-1',
  'cluster-3',
  'cluster-6',
] as const;

export function cases(quick: boolean): CaseSpec[] {
  const q = <T>(full: T, small: T) => (quick ? small : full);
  // Ingest size; drains take the 100,000 jobs, enough that most finished jobs are trimmed
  // by the retention every system keeps (10,000), as in a queue that runs for a while.
  const N = q(20_000, 5_000);
  const DRAIN = q(100_000, 5_000);
  const cap = q(15_000, 5_000);
  const drain = (name: string, jobs: number, concurrency: number, groups: number, processes = 0): CaseSpec => ({
    name,
    kind: 'drain',
    params: { jobs, concurrency, groups, processes, capMs: cap },
  });
  const fairness = {
    heavyJobs: q(20_000, 3_000),
    jobMs: 10,
    concurrency: 100,
    lightTenants: 10,
    lightEveryMs: 50,
    lightMs: q(3000, 1000),
    capMs: q(8000, 2500),
  };
  const latency = (pct: number): CaseSpec => ({
    name: `latency-${pct}`,
    kind: 'latency',
    loadPct: pct,
    params: { durationMs: q(3000, 1200), concurrency: 100, groups: 1000, idleMs: pct === 10 ? q(3000, 1000) : 0 },
  });
  return [
    { name: 'ingest-serial', kind: 'ingest', params: { mode: 'serial', jobs: q(5_000, 2_000), width: 1, groups: 1000 } },
    { name: 'ingest-inflight', kind: 'ingest', params: { mode: 'inflight', jobs: N, width: 1000, groups: 1000 } },
    { name: 'ingest-bulk50', kind: 'ingest', params: { mode: 'bulk', jobs: N, width: 50, groups: 1000 } },
    { name: 'ingest-bulk1000', kind: 'ingest', params: { mode: 'bulk', jobs: N, width: 1000, groups: 1000 } },
    drain('drain-c1', q(5_000, 2_000), 1, 1000),
    drain('drain-c10', DRAIN, 10, 1000),
    drain('drain-c100', DRAIN, 100, 1000),
    drain('drain-c100-2proc', DRAIN, 100, 1000, 2),
    // Rota only: the c100 drain with its no-op handler in-process, isolated in threads, and in
    // processes (the pools' defaults, started before the drain); interleaved, since decisions/0035 compares them.
    // (--quick: 500 jobs at concurrency 4, a check that the cases run, not a measure)
    ...([undefined, 'thread', 'process'] as const).map(
      (isolate): CaseSpec => ({
        name: `isolate-c100-${isolate ?? 'inprocess'}`,
        kind: 'drain',
        systems: ['rota'],
        interleave: 'isolate',
        params: { jobs: q(50_000, 500), concurrency: q(100, 4), groups: 1000, processes: 0, capMs: cap, isolate },
      }),
    ),
    latency(10),
    latency(50),
    latency(80),
    { name: 'fairness-light', kind: 'fairness', params: { mode: 'flood', ...fairness } },
    { name: 'fairness-noflood', kind: 'fairness', params: { mode: 'noflood', ...fairness } },
    // The same number of jobs in each (as many as 100,000 groups of one job need): only the groups change.
    drain('groups-1', DRAIN, 100, 1),
    drain('groups-1000', DRAIN, 100, 1000),
    drain('groups-100000', DRAIN, 100, 100_000),
    // Rota's own features: 10,000 jobs due within one second; 1,000 groups each with a rate limit.
    {
      name: 'delay-10k',
      kind: 'delay',
      systems: ['rota'],
      params: { jobs: 10_000, groups: 1000, concurrency: 100, spreadMs: 1000, leadMs: 3000, capMs: cap },
    },
    {
      name: 'rate-1000',
      kind: 'rate',
      systems: ['rota'],
      params: { jobs: q(100_000, 20_000), groups: 1000, concurrency: 100, headroom: 1.5, windowMs: 200, capMs: cap },
    },
    // One queue of 1, 3 and 6 shards on a cluster of three primaries: the c100 drain over 1,000
    // groups and the noisy neighbour (fewer runs than the rest, to stay within about 3 minutes;
    // interleaved, since the goals compare them).
    ...[1, 3, 6].map(
      (shards): CaseSpec => ({
        name: `cluster-${shards}`,
        kind: 'cluster',
        systems: ['rota'],
        runs: 3,
        interleave: 'cluster',
        params: {
          shards,
          jobs: DRAIN,
          concurrency: 100,
          groups: 1000,
          capMs: cap,
          flood: {
            heavyJobs: fairness.heavyJobs,
            jobMs: fairness.jobMs,
            concurrency: fairness.concurrency,
            lightTenants: fairness.lightTenants,
            lightEveryMs: fairness.lightEveryMs,
            capMs: fairness.capMs,
          },
        },
      }),
    ),
  ];
}
