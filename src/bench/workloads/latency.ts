/**
 * Latency: Poisson arrivals, each job submitted on its own, at a fraction of the system's own
 * maximum rate; pickup latency = handler start − submit call. Then the executor sits idle and the
 * Redis commands it causes per second are counted (a polling executor shows up here).
 */
import { GROUP_HISTORY_FLUSH_MS } from '../../executor/group-history.js';
import { nowMs, percentiles, redisDelta, sampleRedis, sleep } from '../measure.js';
import { payload } from '../peers/types.js';
import { groupOf, handlerWork, Phase, paddingOf, type RunContext, type RunResult, Seen, until } from './common.js';

export interface LatencyParams {
  /** Arrivals per second. */
  rate: number;
  durationMs: number;
  concurrency: number;
  groups: number;
  /** Also measure Redis commands per second while idle, for this long (0: skip). */
  idleMs: number;
}

/**
 * The system's own maximum in this setup: jobs submitted one by one with `inFlight` outstanding,
 * while the executor runs them, for `durationMs`; returns jobs completed per second.
 */
export async function calibrate(
  ctx: RunContext,
  p: { durationMs: number; concurrency: number; groups: number; inFlight: number },
): Promise<number> {
  let done = 0;
  const exec = await ctx.adapter.startExecutor({
    concurrency: p.concurrency,
    handler: () => {
      done++;
      return handlerWork(ctx.handlerMs);
    },
  });
  await sleep(200);
  const t0 = performance.now();
  let i = 0;
  let stop = false;
  const lane = async () => {
    while (!stop) await ctx.adapter.submit({ group: groupOf(i++, p.groups), data: payload(nowMs(), paddingOf(ctx)) });
  };
  const lanes = Array.from({ length: p.inFlight }, lane);
  // Skip the first quarter (ramp-up), measure the rest.
  await sleep(p.durationMs / 4);
  const d0 = done;
  const m0 = performance.now();
  await sleep((p.durationMs * 3) / 4);
  const rate = (done - d0) / ((performance.now() - m0) / 1000);
  stop = true;
  await Promise.all(lanes);
  await until(() => done >= i, 30_000);
  await exec.close();
  void t0;
  return rate;
}

export async function runLatency(ctx: RunContext, p: LatencyParams): Promise<RunResult> {
  const seen = new Seen(ctx.onJobs);
  const waits: number[] = [];
  const exec = await ctx.adapter.startExecutor({
    concurrency: p.concurrency,
    handler: (id, _g, data) => {
      waits.push(nowMs() - data.t);
      seen.add(id);
      return handlerWork(ctx.handlerMs);
    },
  });
  await sleep(300); // let the executor reach its idle wait

  const phase = await new Phase(ctx.admin).begin();
  const start = performance.now();
  let next = start;
  let submitted = 0;
  let lagMs = 0;
  const pending = new Set<Promise<void>>();
  while (next - start < p.durationMs) {
    const now = performance.now();
    if (next > now) {
      // Wait for the next arrival without holding the event loop: the executor under test runs
      // in this process, and a spin here would delay its replies (timers are too coarse below 1 ms).
      if (next > now + 1) await sleep(next - now - 0.5);
      else await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    while (next <= performance.now() && next - start < p.durationMs) {
      lagMs = Math.max(lagMs, performance.now() - next);
      const pr = ctx.adapter.submit({ group: groupOf(submitted, p.groups), data: payload(nowMs(), paddingOf(ctx)) });
      submitted++;
      pending.add(pr);
      void pr.finally(() => pending.delete(pr));
      next += -Math.log(1 - Math.random()) * (1000 / p.rate);
    }
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(pending);
  const capped = !(await until(() => seen.size + seen.duplicates >= submitted, 30_000));
  const seconds = phase.elapsed();
  const m = await phase.end();

  let idleCommandsPerSec: number | null = null;
  if (p.idleMs > 0) {
    // Past the sends an executor defers (Rota's per-group run counts go out within
    // GROUP_HISTORY_FLUSH_MS of a run's end): those are not polling.
    await sleep(GROUP_HISTORY_FLUSH_MS + 500);
    const a = await sampleRedis(ctx.admin);
    await sleep(p.idleMs);
    const d = redisDelta(a, await sampleRedis(ctx.admin));
    idleCommandsPerSec = d.commands / (d.ms / 1000);
  }
  await exec.close();
  const [p50, p99, p999] = percentiles(waits, [50, 99, 99.9]);
  const dist = percentiles(
    waits,
    Array.from({ length: 101 }, (_, i) => i),
  );
  return {
    dist,
    jobs: submitted,
    seconds,
    jobsPerSec: submitted / seconds,
    ...m,
    expected: submitted,
    ...seen.counts(),
    capped,
    extra: { rate: p.rate, p50Ms: p50, p99Ms: p99, p999Ms: p999, maxProducerLagMs: lagMs, idleCommandsPerSec },
  };
}
