/** Periodic tasks: the store ({@link PeriodicTasks}) and the scheduler replicas ({@link Scheduler}). */

export type { CatchupPolicy, OverlapPolicy, PeriodicTask, PeriodicTaskDefinition } from './definition.js';
export {
  type FiredInfo,
  type KeepRuns,
  type OccurrenceCount,
  type OccurrenceOutcome,
  Scheduler,
  type SchedulerEvents,
  type SchedulerOptions,
} from './scheduler.js';
export {
  type BackfillOptions,
  type BackfillOverlap,
  type BackfillResult,
  type DisableOptions,
  type EmittedEvent,
  type EventRule,
  type EventRuleDefinition,
  type ListTasksOptions,
  PeriodicTasks,
  type PeriodicTasksOptions,
  type RunRecord,
  type RunStatus,
  type RunsOptions,
  type SchedulerReplica,
  type UpcomingOptions,
  type UpcomingRun,
} from './tasks.js';
