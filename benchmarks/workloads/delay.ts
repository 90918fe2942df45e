/**
 * Delayed jobs (Rota only): N jobs submitted ahead with due times spread over one second, an
 * executor already running (asleep until the first is due). Lateness = handler start − due time.
 * The measured phase runs from the first due time until every job has run.
 */

import { nowMs, percentiles, sleep } from '../../src/bench/measure.js';
import { connectionOf, payload } from '../../src/bench/peers/types.js';
import { groupOf, Phase, type RunContext, type RunResult, Seen, until } from '../../src/bench/workloads/common.js';
import { Queue } from '../../src/index.js';

export interface DelayParams {
  jobs: number;
  groups: number;
  concurrency: number;
  /** The due times are spread evenly over this many ms. */
  spreadMs: number;
  /** The first due time is this long after the submits begin (they must all be in by then). */
  leadMs: number;
  capMs: number;
}

export async function runDelay(ctx: RunContext, p: DelayParams): Promise<RunResult> {
  const queue = new Queue(ctx.queue, { connection: connectionOf(ctx.at) });
  const seen = new Seen();
  const lateness: number[] = [];
  const exec = await ctx.adapter.startExecutor({
    concurrency: p.concurrency,
    handler: (id, _group, data) => {
      lateness.push(nowMs() - data.t);
      seen.add(id);
    },
  });
  try {
    const first = Math.ceil(Date.now() + p.leadMs);
    const submitStart = performance.now();
    for (let i = 0; i < p.jobs; i += 1000) {
      const specs = [];
      for (let k = i; k < Math.min(p.jobs, i + 1000); k++) {
        const runAt = first + Math.floor((k * p.spreadMs) / p.jobs);
        specs.push({ task: 'bench', group: groupOf(k, p.groups), args: payload(runAt), runAt });
      }
      await queue.submitBulk(specs);
    }
    const submitMs = performance.now() - submitStart;
    if (Date.now() >= first) throw new Error(`the submits took ${Math.round(submitMs)} ms, past the lead of ${p.leadMs} ms`);
    await sleep(first - Date.now() - 5);
    const phase = await new Phase(ctx.admin).begin();
    const capped = !(await until(() => lateness.length >= p.jobs, p.capMs + p.spreadMs));
    const seconds = phase.elapsed();
    const m = await phase.end();
    const [p50, p99, p999, max] = percentiles(lateness, [50, 99, 99.9, 100]);
    return {
      jobs: lateness.length,
      seconds,
      jobsPerSec: lateness.length / seconds,
      redis: m.redis,
      nodeCpuUs: m.nodeCpuUs,
      peakRssBytes: m.peakRssBytes,
      expected: p.jobs,
      unique: seen.size,
      duplicates: seen.duplicates,
      capped,
      extra: { p50Ms: p50, p99Ms: p99, p999Ms: p999, maxLatenessMs: max, submitMs },
      dist: percentiles(
        lateness,
        Array.from({ length: 101 }, (_, i) => i),
      ),
    };
  } finally {
    await exec.close();
    await queue.close();
  }
}
