/** Ingest: how fast jobs are accepted (serially, with 1,000 in flight, and in bulk batches). */
import { type JobIn, payload } from '../peers/types.js';
import { groupOf, Phase, paddingOf, type RunContext, type RunResult } from './common.js';

export interface IngestParams {
  mode: 'serial' | 'inflight' | 'bulk';
  jobs: number;
  /** Batch size for bulk, or jobs in flight. */
  width: number;
  groups: number;
}

export async function runIngest(ctx: RunContext, p: IngestParams): Promise<RunResult> {
  const { adapter } = ctx;
  const job = (i: number): JobIn => ({ group: groupOf(i, p.groups), data: payload(i, paddingOf(ctx)) });
  const phase = await new Phase(ctx.admin).begin();
  if (p.mode === 'serial') {
    for (let i = 0; i < p.jobs; i++) await adapter.submit(job(i));
  } else if (p.mode === 'inflight') {
    let next = 0;
    const lane = async () => {
      while (next < p.jobs) await adapter.submit(job(next++));
    };
    await Promise.all(Array.from({ length: p.width }, lane));
  } else {
    for (let i = 0; i < p.jobs; i += p.width) {
      const batch: JobIn[] = [];
      for (let k = i; k < Math.min(p.jobs, i + p.width); k++) batch.push(job(k));
      await adapter.submitBulk(batch);
    }
  }
  const seconds = phase.elapsed();
  const m = await phase.end();
  const stored = await adapter.waiting();
  return {
    jobs: p.jobs,
    seconds,
    jobsPerSec: p.jobs / seconds,
    ...m,
    expected: p.jobs,
    unique: stored,
    duplicates: Math.max(0, stored - p.jobs),
    capped: false,
    extra: {},
  };
}
