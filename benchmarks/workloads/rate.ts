/**
 * Rate-limited groups (Rota only): the drain of N jobs over G groups, first with no limits (the
 * reference), then on a second queue where every group has a rate limit that allows the full
 * rate (`headroom` × the reference's rate per group, per window of `windowMs`), so that the
 * limits are checked on every take and their logs trimmed as they fill (the window is short
 * against the drain), without holding a group back. The result is
 * the limited drain; `vsUnlimited` is its rate over the reference's, measured in the same run.
 */

import { openSystem } from '../../src/bench/peers/open.js';
import { connectionOf } from '../../src/bench/peers/types.js';
import { groupOf, Phase, type RunContext, type RunResult, Seen, until } from '../../src/bench/workloads/common.js';
import { fill } from '../../src/bench/workloads/drain.js';
import { Queue } from '../../src/index.js';

export interface RateParams {
  jobs: number;
  groups: number;
  concurrency: number;
  /** Each group's limit over its share of the unlimited rate. */
  headroom: number;
  /** The limits' window. */
  windowMs: number;
  capMs: number;
}

/** Drains the queue of `ctx` (filled already) with one executor; the run's seconds and measurements. */
async function drain(ctx: RunContext, p: RateParams, seen: Seen) {
  const phase = await new Phase(ctx.admin).begin();
  let n = 0;
  const exec = await ctx.adapter.startExecutor({
    concurrency: p.concurrency,
    handler: (id) => {
      seen.add(id);
      n++;
    },
  });
  const capped = !(await until(() => n >= p.jobs, p.capMs));
  const seconds = phase.elapsed();
  await exec.close();
  return { n, seconds, capped, m: await phase.end() };
}

export async function runRate(ctx: RunContext, p: RateParams): Promise<RunResult> {
  await fill(ctx, p.jobs, p.groups);
  const reference = await drain(ctx, p, new Seen());
  const unlimited = reference.n / reference.seconds;

  const name = `${ctx.queue}-rated`;
  const adapter = await openSystem('rota', ctx.at, name);
  const queue = new Queue(name, { connection: connectionOf(ctx.at) });
  try {
    const max = Math.max(1, Math.ceil((p.headroom * unlimited * p.windowMs) / 1000 / p.groups));
    const rate = { max, perMs: p.windowMs };
    await Promise.all(Array.from({ length: p.groups }, (_, i) => queue.setGroupLimit(groupOf(i, p.groups), { rate })));
    const rated: RunContext = { ...ctx, queue: name, adapter };
    await fill(rated, p.jobs, p.groups);
    const seen = new Seen();
    const limited = await drain(rated, p, seen);
    const ran = seen.size + seen.duplicates;
    return {
      jobs: ran,
      seconds: limited.seconds,
      jobsPerSec: ran / limited.seconds,
      redis: limited.m.redis,
      nodeCpuUs: limited.m.nodeCpuUs,
      peakRssBytes: limited.m.peakRssBytes,
      expected: p.jobs,
      unique: seen.size,
      duplicates: seen.duplicates,
      capped: limited.capped || reference.capped,
      extra: {
        unlimitedJobsPerSec: unlimited,
        vsUnlimited: ran / limited.seconds / unlimited,
        rateMaxPerWindow: max,
        unlimitedRedisCpuUsPerJob: reference.m.redis.cpuUs / Math.max(1, reference.n),
      },
    };
  } finally {
    await queue.close();
    await adapter.close();
  }
}
