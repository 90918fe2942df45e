/**
 * The counters of the metrics endpoint (Prometheus `_total`s that only grow), each counted where
 * its event happens, so that `sum by (queue, task) (rate(...))` over every endpoint is exact:
 * - the executors' (./metrics.ts `workers`): runs started, succeeded, failed, retried, and the
 *   jobs their recovery passes took back from expired leases (each job is recovered by one pass
 *   of one executor);
 * - the producer's (the endpoint's `queue`): the jobs that Queue object submitted;
 * - the scheduler replicas' (`schedulers`): periodic occurrences submitted, skipped, missed and
 *   excluded, each settled by one replica.
 * Cancellations are made by whichever client asks (a dashboard, `rota jobs cancel`, an app) and
 * end in Redis: the shards tally them, and every endpoint serves the queue's whole count, read
 * by the shared sweep (`rota_queue_jobs_cancelled_total`: aggregate it with `max`, not `sum`).
 * None of them costs Redis a command: the in-process ones count events the process has anyway.
 */
import { Counter, type Registry } from 'prom-client';
import type { Worker } from '../executor/worker.js';
import type { Scheduler } from '../periodic/scheduler.js';
import type { Job } from '../queue/job.js';
import type { Queue } from '../queue/queue.js';

/** What the counters need of the endpoint. */
export interface CounterSources {
  registry: Registry;
  // biome-ignore lint/suspicious/noExplicitAny: only onSubmitted is used, which every task map has.
  queue: Queue<any>;
  workers: readonly Worker[];
  schedulers: readonly Scheduler[];
  /** Whether the job counters have a `group` label (`--metrics-groups` top:N or all). */
  grouped: boolean;
  /** The `group` label a job of `group` counts under (a group outside the top N: ""). */
  groupLabel(group: string): string;
  /** Resolves once the group labels of this scrape's sweep are known (a group's series may go then). */
  settleGroups(): Promise<unknown>;
  /** The queue's cancelled jobs per task so far, from the last sweep. */
  cancelled(): Promise<ReadonlyMap<string, number>>;
}

/** The job counters that have a `group` label when groups are labelled, for the endpoint to drop a group's series. */
export interface JobCounters {
  /** Removes the series of `group` (it left the top N). */
  dropGroup(group: string): void;
}

/** The job counters counted in this process, by name, with what they count. */
const JOB_COUNTERS = {
  submitted: ['rota_jobs_submitted_total', 'Jobs this process submitted (an existing id answered counts not)'],
  started: ['rota_jobs_started_total', "Runs this process's executors started (their handler was called)"],
  succeeded: ['rota_jobs_succeeded_total', "Runs this process's executors ended success"],
  failed: [
    'rota_jobs_failed_total',
    "Runs this process's executors ended failed for good (retries used up, a permanent error, a timeout, an unknown task)",
  ],
  retried: ['rota_jobs_retried_total', "Runs this process's executors ended failed with a retry to come (the job stuck)"],
  recovered: [
    'rota_jobs_recovered_total',
    "Jobs whose lease expired (their executor died, froze or lost Redis) that this process's recovery passes ended as failed attempts",
  ],
} as const;

/** Registers the counters in `s.registry` and starts counting. */
export function registerCounters(s: CounterSources): JobCounters {
  const name = s.queue.name;
  const labelNames = s.grouped ? ['queue', 'task', 'group'] : ['queue', 'task'];
  const counters = Object.fromEntries(
    Object.entries(JOB_COUNTERS).map(([key, [metric, help]]) => [
      key,
      new Counter({
        name: metric,
        help,
        labelNames,
        registers: [s.registry],
        // (a scrape shows the series of the groups of its own sweep)
        async collect() {
          if (s.grouped) await s.settleGroups();
        },
      }),
    ]),
  ) as Record<keyof typeof JOB_COUNTERS, Counter>;
  // (per group label, the tasks it has series of: a group's series go when it leaves the top N)
  const tasksOf = new Map<string, Set<string>>();
  const labels = (task: string, group: string): Record<string, string> => {
    if (!s.grouped) return { queue: name, task };
    const label = s.groupLabel(group);
    let tasks = tasksOf.get(label);
    if (!tasks) {
      tasks = new Set();
      tasksOf.set(label, tasks);
    }
    tasks.add(task);
    return { queue: name, task, group: label };
  };
  const count = (which: keyof typeof JOB_COUNTERS) => (job: Pick<Job, 'task' | 'group'>) =>
    counters[which].inc(labels(job.task, job.group));

  s.queue.onSubmitted((jobs) => {
    for (const job of jobs) count('submitted')(job);
  });
  for (const w of s.workers) {
    w.on('started', count('started'));
    w.on('completed', count('succeeded'));
    w.on('failed', count('failed'));
    w.on('stuck', count('retried'));
    w.on('recovered', (jobs) => {
      for (const job of jobs) count('recovered')(job);
    });
  }

  const occurrences = new Counter({
    name: 'rota_periodic_occurrences_total',
    help: 'Periodic occurrences the scheduler replicas of this process settled, by job task and outcome: submitted, skipped (overlap policy), missed (catch-up policy, after downtime), excluded (exclusions and schedule bounds)',
    labelNames: ['queue', 'task', 'outcome'],
    registers: [s.registry],
  });
  for (const sc of s.schedulers) {
    sc.on('occurrences', (counts) => {
      for (const c of counts) occurrences.inc({ queue: name, task: c.task, outcome: c.outcome }, c.count);
    });
  }

  // The queue's whole count, as Redis tallies it: the series follow the tally (a shard dropped by
  // a reshard takes its part along, which Prometheus reads as a counter reset).
  const served = new Map<string, number>();
  new Counter({
    name: 'rota_queue_jobs_cancelled_total',
    help: 'Jobs of the queue that ended cancelled (at once, or their run), whoever cancelled them: the count Redis keeps, the same on every endpoint (aggregate with max)',
    labelNames: ['queue', 'task'],
    registers: [s.registry],
    async collect() {
      for (const [task, n] of await s.cancelled()) {
        const before = served.get(task) ?? 0;
        if (n === before) continue;
        if (n < before) this.remove({ queue: name, task });
        this.inc({ queue: name, task }, n < before ? n : n - before);
        served.set(task, n);
      }
    },
  });

  return {
    dropGroup(group) {
      for (const task of tasksOf.get(group) ?? []) {
        for (const c of Object.values(counters)) c.remove({ queue: name, task, group });
      }
      tasksOf.delete(group);
    },
  };
}
