/**
 * The runner process of `rota bench`: it gets a plan over IPC, runs each workload on each system
 * (interleaved: every system's run of one workload before the next workload), each run on a queue
 * of its own that it removes after, and reports each run. The CLI runs it as a child process so
 * that Ctrl-C can stop it at once and then remove what it wrote.
 */
import { Cluster, Redis } from 'ioredis';
import { BenchStore } from '../redis/bench-store.js';
import { SummedInfo } from './measure.js';
import { openSystem } from './peers/open.js';
import { type Endpoint, paddingFor, type SystemName } from './peers/types.js';
import { type BenchPlan, ROTA_ONLY, type RunnerMessage, type RunRecord, type Workload } from './plan.js';
import type { RunContext } from './workloads/common.js';
import { runDrain } from './workloads/drain.js';
import { runFairness } from './workloads/fairness.js';
import { runIngest } from './workloads/ingest.js';
import { calibrate, runLatency } from './workloads/latency.js';
import { runPeriodic } from './workloads/periodic.js';

const send = (m: RunnerMessage) => process.send!(m);
/** Progress messages are sent this often at most (ms). */
const PROGRESS_EVERY_MS = 250;

/** A context's `onJobs`: sends the jobs done to the CLI, a few times a second at most. */
function progressSender(total: number | undefined): (done: number) => void {
  let last = 0;
  return (done) => {
    const t = performance.now();
    if (t - last < PROGRESS_EVERY_MS) return;
    last = t;
    send({ type: 'progress', done, total });
  };
}

/** The jobs a workload's step runs, when known ahead (drain: the jobs; fairness: the backlog, the light tenants' few besides). */
function plannedJobs(workload: Workload, jobs: number): number | undefined {
  return workload === 'drain' || workload === 'fairness' ? jobs : undefined;
}

/** The fairness workload's parameters at the plan's sizes (flood: with the backlog; noflood: the baseline). */
function fairnessParams(plan: BenchPlan, mode: 'flood' | 'noflood', capMs: number) {
  const s = plan.sizes;
  return {
    mode,
    heavyJobs: s.jobs,
    jobMs: s.handlerMs || 10,
    concurrency: s.concurrency,
    lightTenants: 10,
    lightEveryMs: 50,
    // (noflood: the light tenants alone, as long as the latency workload runs)
    lightMs: mode === 'noflood' ? Math.max(1000, s.durationS * 1000) : 0,
    capMs,
  };
}

/** A client for INFO and cleanup: a Cluster's when the endpoint names nodes. */
function clientOf(at: Endpoint): Redis | Cluster {
  if (typeof at === 'string') return new Redis(at);
  if (!at.nodes) return new Redis(at.options);
  const { host: _h, port: _p, db: _db, ...nodeOptions } = at.options;
  return new Cluster(at.nodes, { redisOptions: nodeOptions });
}

/** Runs `workload` of the plan on `system`, on queue `queue`. */
async function runOne(plan: BenchPlan, ctx: RunContext, workload: Workload): Promise<Omit<RunRecord, 'primaries'>> {
  const s = plan.sizes;
  const capMs = s.durationS * 20_000;
  const base = { workload, system: ctx.system };
  switch (workload) {
    case 'ingest':
      return { ...base, result: await runIngest(ctx, { mode: 'bulk', jobs: s.jobs, width: 1000, groups: s.groups }) };
    case 'drain':
      return {
        ...base,
        result: await runDrain(ctx, {
          jobs: s.jobs,
          concurrency: s.concurrency,
          groups: s.groups,
          processes: s.executors,
          capMs,
        }),
      };
    case 'latency': {
      const max = await calibrate(ctx, {
        // (as long as the harness's full calibration at least: a peer's worker takes a while to start)
        durationMs: Math.max(2500, s.durationS * 1000),
        concurrency: s.concurrency,
        groups: s.groups,
        inFlight: 100,
      });
      const result = await runLatency(ctx, {
        // (at least one a second: a system that ran nothing while calibrating still gets a latency figure)
        rate: Math.max(1, max / 2),
        durationMs: s.durationS * 1000,
        concurrency: s.concurrency,
        groups: s.groups,
        idleMs: 0,
      });
      return { ...base, result, maxJobsPerSec: max };
    }
    case 'fairness': {
      const result = await runFairness(ctx, fairnessParams(plan, 'flood', capMs));
      // The baseline: the same tenants without the flood, on a queue of its own.
      const queue = `${ctx.queue}-alone`;
      const adapter = await openSystem(ctx.system, plan.at, queue);
      try {
        const baseline = await runFairness(
          { ...ctx, queue, adapter, onJobs: progressSender(s.jobs) },
          fairnessParams(plan, 'noflood', capMs),
        );
        return { ...base, result, baseline };
      } finally {
        await adapter.close();
      }
    }
    case 'periodic':
      return { ...base, result: await runPeriodic(ctx, { tasks: s.jobs, concurrency: s.concurrency, capMs }) };
  }
}

/** Runs the plan, reporting each phase and run to the parent. */
export async function runPlan(plan: BenchPlan): Promise<void> {
  const client = clientOf(plan.at);
  client.on('error', () => {});
  const store = new BenchStore(client);
  // (a Cluster client knows its primaries once it has connected)
  await store.pingMs(1);
  const primaries = store.primaries();
  const steps = plan.workloads.reduce((n, w) => n + plan.systems.filter((s) => s === 'rota' || !ROTA_ONLY.includes(w)).length, 0);
  let step = 0;
  try {
    for (const workload of plan.workloads) {
      for (const system of plan.systems as SystemName[]) {
        if (system !== 'rota' && ROTA_ONLY.includes(workload)) continue;
        send({ type: 'phase', workload, system, step: step++, steps });
        const queue = `${plan.namespace}-${step}`;
        const adapter = await openSystem(system, plan.at, queue);
        const ctx: RunContext = {
          system,
          at: plan.at,
          queue,
          adapter,
          admin: primaries.length > 1 ? new SummedInfo(primaries) : primaries[0],
          quick: false,
          padding: paddingFor(plan.sizes.payloadBytes),
          handlerMs: plan.sizes.handlerMs,
          executorEntry: plan.executorEntry,
          onJobs: progressSender(plannedJobs(workload, plan.sizes.jobs)),
        };
        let record: Omit<RunRecord, 'primaries'>;
        try {
          record = await runOne(plan, ctx, workload);
        } finally {
          await adapter.close();
        }
        send({ type: 'record', record: { ...record, primaries: primaries.map((p) => p.address) } });
        await store.deleteNamespace(queue);
      }
    }
  } finally {
    client.disconnect();
  }
}

/** The runner process's body: waits for the plan, runs it, exits. Ends too when the parent goes. */
export function runRunnerChild(): Promise<never> {
  if (!process.send) throw new Error('the bench runner is started by rota bench (it needs an IPC channel)');
  process.once('disconnect', () => process.exit(1));
  process.once('message', (plan: BenchPlan) => {
    runPlan(plan).then(
      () => process.send!({ type: 'done' } satisfies RunnerMessage, () => process.exit(0)),
      (err: unknown) => {
        process.send!({ type: 'error', message: (err as Error).message } satisfies RunnerMessage, () => process.exit(1));
      },
    );
  });
  return new Promise<never>(() => {});
}
