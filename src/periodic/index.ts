/** Periodic tasks: the store ({@link PeriodicTasks}) and the scheduler replicas ({@link Scheduler}). */
export { PeriodicTasks, type PeriodicTasksOptions, type UpcomingRun, type RunRecord, type RunStatus, type EventRuleDefinition, type EventRule, type EmittedEvent } from './tasks.js';
export { Scheduler, type SchedulerOptions, type SchedulerEvents, type FiredInfo, type KeepRuns } from './scheduler.js';
export type { PeriodicTask, PeriodicTaskDefinition, OverlapPolicy, CatchupPolicy } from './definition.js';
