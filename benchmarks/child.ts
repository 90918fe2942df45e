/**
 * A system's benchmark process: the orchestrator (run.ts) sends it one run at a time; it opens the
 * system on a fresh queue, runs the workload, closes everything and answers with the measurements.
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { openSystem } from '../src/bench/peers/open.js';
import type { SystemName } from '../src/bench/peers/types.js';
import type { RunContext, RunResult } from '../src/bench/workloads/common.js';
import { runDrain } from '../src/bench/workloads/drain.js';
import { runFairness } from '../src/bench/workloads/fairness.js';
import { runIngest } from '../src/bench/workloads/ingest.js';
import { calibrate, runLatency } from '../src/bench/workloads/latency.js';
import { BenchStore } from '../src/redis/bench-store.js';
import type { CaseSpec } from './cases.js';
import { runCluster } from './workloads/cluster.js';
import { runDelay } from './workloads/delay.js';
import { runRate } from './workloads/rate.js';

export interface RunRequest {
  type: 'run';
  seq: number;
  system: SystemName;
  url: string;
  spec: CaseSpec;
  quick: boolean;
  /** For latency cases: arrivals per second. */
  rate?: number;
  /** For cluster cases: the cluster's nodes (all primaries). */
  cluster?: Array<{ host: string; port: number }>;
}

export type RunReply = { type: 'result'; seq: number; result: RunResult } | { type: 'error'; seq: number; error: string };

let client: Redis | null = null;
let admin: BenchStore | null = null;
const executorEntry = { script: fileURLToPath(new URL('./executor.ts', import.meta.url)), args: [] };

async function handle(req: RunRequest): Promise<RunResult> {
  client ??= new Redis(req.url);
  admin ??= new BenchStore(client);
  const queue = `bench-${req.seq}`;
  if (req.spec.kind === 'cluster') {
    if (!req.cluster) throw new Error('a cluster case needs the cluster nodes');
    return runCluster(req.cluster, queue, req.quick, req.spec.params);
  }
  const adapter = await openSystem(req.system, req.url, queue);
  const ctx: RunContext = { system: req.system, at: req.url, queue, adapter, admin, quick: req.quick, executorEntry };
  try {
    const s = req.spec;
    switch (s.kind) {
      case 'ingest':
        return await runIngest(ctx, s.params);
      case 'drain':
        return await runDrain(ctx, s.params);
      case 'latency':
        if (req.rate === undefined) {
          // Calibration: the maximum rate in the latency setup, reported as jobsPerSec.
          const rate = await calibrate(ctx, {
            durationMs: req.quick ? 1200 : 2500,
            concurrency: s.params.concurrency,
            groups: s.params.groups,
            inFlight: 100,
          });
          return {
            jobs: 0,
            seconds: 0,
            jobsPerSec: rate,
            redis: { cpuUs: 0, commands: 0, scriptCalls: 0, byCommand: {}, ms: 0 },
            nodeCpuUs: 0,
            peakRssBytes: 0,
            expected: 0,
            unique: 0,
            duplicates: 0,
            capped: false,
            extra: {},
          };
        }
        return await runLatency(ctx, { ...s.params, rate: req.rate });
      case 'fairness':
        return await runFairness(ctx, s.params);
      case 'delay':
        return await runDelay(ctx, s.params);
      case 'rate':
        return await runRate(ctx, s.params);
    }
  } finally {
    await adapter.close();
  }
}

process.on('message', async (req: RunRequest | { type: 'exit' }) => {
  if (req.type === 'exit') {
    client?.disconnect();
    process.exit(0);
  }
  try {
    const result = await handle(req);
    process.send!({ type: 'result', seq: req.seq, result } satisfies RunReply);
  } catch (err) {
    process.send!({ type: 'error', seq: req.seq, error: (err as Error).stack ?? String(err) } satisfies RunReply);
  }
});
process.send!({ type: 'ready' });
