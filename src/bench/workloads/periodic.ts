/**
 * Periodic (Rota only): N periodic tasks all due at the same second (timer `*:*:0/5`, every five
 * seconds), one scheduler and one executor running; the first occurrence wholly after the
 * definitions is measured. Lateness = handler start − the occurrence's planned time (so it
 * includes the scheduler's submit and the executor's pickup); the rate is N over the time from
 * the occurrence to the last start. Past capacity the phase lasts longer than one period, and the
 * scheduler submits the next occurrences meanwhile: `extra.submitted` counts every occurrence it
 * submitted during the phase, and `extra.commandsPerOccurrence` and `extra.cpuUsPerOccurrence`
 * divide Redis's work by those (the per-job figures divide it by the measured occurrence's jobs).
 */
import { PeriodicTasks, Scheduler } from '../../periodic/index.js';
import { nowMs, percentiles } from '../measure.js';
import { rotaConnection } from '../peers/rota.js';
import { Phase, type RunContext, type RunResult, Seen, until } from './common.js';

export interface PeriodicParams {
  tasks: number;
  concurrency: number;
  /** Longest wait, in ms, after the occurrence for every task's job to start. */
  capMs: number;
}

/** The period of the tasks' timer (`*:*:0/5`). */
const PERIOD_MS = 5000;

export async function runPeriodic(ctx: RunContext, p: PeriodicParams): Promise<RunResult> {
  const { connection, shards, close } = rotaConnection(ctx.at);
  const tasks = new PeriodicTasks(ctx.queue, { connection, shards });
  const scheduler = new Scheduler(ctx.queue, { connection, shards });
  scheduler.on('error', () => {});
  let submitted = 0;
  let counting = false;
  scheduler.on('fired', (f) => {
    if (counting) submitted += f.submitted;
  });
  const seen = new Seen();
  const late: number[] = [];
  let occurrence = Number.POSITIVE_INFINITY;
  let lastStart = 0;
  try {
    for (let i = 0; i < p.tasks; i += 1000) {
      await Promise.all(
        Array.from({ length: Math.min(1000, p.tasks - i) }, (_, k) =>
          tasks.upsert({ id: `t${i + k}`, task: 'bench', timer: '*:*:0/5', overlap: 'allow' }),
        ),
      );
    }
    // The first occurrence that falls wholly after the definitions and the scheduler's start.
    occurrence = Math.ceil((Date.now() + 2000) / PERIOD_MS) * PERIOD_MS;
    const exec = await ctx.adapter.startExecutor({
      concurrency: p.concurrency,
      handler: (id) => {
        const at = Number(id.slice(id.lastIndexOf('@') + 1));
        if (at !== occurrence) return;
        const now = nowMs();
        seen.add(id);
        late.push(now - at);
        lastStart = Math.max(lastStart, now);
      },
    });
    await scheduler.start();
    await until(() => Date.now() >= occurrence - 200, PERIOD_MS * 2, 20);
    const phase = await new Phase(ctx.admin).begin();
    counting = true;
    const capped = !(await until(() => seen.size >= p.tasks, p.capMs, 5));
    const seconds = phase.elapsed();
    await scheduler.close();
    counting = false;
    await exec.close();
    const m = await phase.end();
    const occurrences = Math.max(1, submitted);
    const [p50, p99, max] = percentiles(late, [50, 99, 100]);
    const spanS = Math.max(1e-3, (lastStart - occurrence) / 1000);
    return {
      dist: percentiles(
        late,
        Array.from({ length: 101 }, (_, i) => i),
      ),
      jobs: seen.size,
      seconds,
      jobsPerSec: seen.size / spanS,
      ...m,
      expected: p.tasks,
      ...seen.counts(),
      capped,
      extra: {
        p50Ms: p50,
        p99Ms: p99,
        maxMs: max,
        tasks: p.tasks,
        submitted,
        commandsPerOccurrence: m.redis.commands / occurrences,
        cpuUsPerOccurrence: m.redis.cpuUs / occurrences,
      },
    };
  } finally {
    await scheduler.close().catch(() => {});
    await tasks.close();
    await close();
  }
}
