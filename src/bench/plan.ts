/**
 * What one `rota bench` asks for (the plan the CLI hands the runner process) and what each run
 * gives back; shared by the CLI side (./bench.ts) and the runner process (./runner.ts).
 */
import type { Endpoint, SystemName } from './peers/types.js';
import type { ExecutorEntry, RunResult } from './workloads/common.js';

/** The workloads, in the order `--workload all` runs them. */
export const WORKLOADS = ['ingest', 'drain', 'latency', 'fairness', 'periodic'] as const;
export type Workload = (typeof WORKLOADS)[number];

/** Workloads a peer has no counterpart of (Rota alone runs them). */
export const ROTA_ONLY: readonly Workload[] = ['periodic'];

/** The sizes of a bench (the CLI's flags). */
export interface BenchSizes {
  jobs: number;
  groups: number;
  concurrency: number;
  executors: number;
  handlerMs: number;
  payloadBytes: number;
  durationS: number;
}

/** The plan the runner process gets. */
export interface BenchPlan {
  at: Endpoint;
  /** Queue namespace: every queue of the bench is named `<namespace>-<n>`. */
  namespace: string;
  workloads: Workload[];
  systems: SystemName[];
  sizes: BenchSizes;
  executorEntry: ExecutorEntry;
}

/** One measured run, with the server CPU each primary used in it. */
export interface RunRecord {
  workload: Workload;
  system: SystemName;
  result: RunResult;
  /** The address of each primary (one for a single server), in the order of RedisDelta.partsCpuUs. */
  primaries: string[];
  /** Latency: the calibrated maximum, of which the run took half. */
  maxJobsPerSec?: number;
  /** Fairness: the same tenants without the flood (the light tenants alone, then the backlog alone). */
  baseline?: RunResult;
}

/** Messages from the runner process to the CLI. */
export type RunnerMessage =
  | { type: 'phase'; workload: Workload; system: SystemName; step: number; steps: number }
  /** Jobs done so far in the current step, of `total` planned when known (sent a few times a second at most). */
  | { type: 'progress'; done: number; total?: number }
  | { type: 'record'; record: RunRecord }
  | { type: 'done' }
  | { type: 'error'; message: string };
