/**
 * Rota: a fair, distributed job queue and periodic-task scheduler for Redis.
 * @packageDocumentation
 */

export * from './dashboard/index.js';
export {
  BatchClosedError,
  BulkSubmitError,
  ConnectionError,
  FanOutLimitError,
  IsolateError,
  LibraryMismatchError,
  PayloadTooLargeError,
  PermanentError,
  RedisFullError,
  ReplicationError,
  ReshardInProgressError,
  ReshardRefusedError,
  RotaError,
  SchemaMismatchError,
  ShardCountError,
  TimeoutError,
  TimerStalledError,
  UndecodableJobError,
  UndecodableTaskError,
  UnexpectedReplyError,
  UnknownTaskError,
  ValidationError,
} from './errors.js';
export { type IsolatedOptions, isolated } from './executor/isolated.js';
export type { PoolStats } from './executor/pool.js';
export type { Keep } from './executor/recoverer.js';
export { installShutdownHandlers, type ShutdownOptions } from './executor/shutdown.js';
export {
  type JobLogger,
  LeaseLostError,
  type RecoveredJob,
  Worker,
  type WorkerEvents,
  type WorkerOptions,
} from './executor/worker.js';
export { createLogger } from './observability/logger.js';
export { type MetricsOptions, type MetricsServer, serveMetrics } from './observability/metrics.js';
export * from './periodic/index.js';
export {
  Batch,
  type BatchCallback,
  type BatchOptions,
  type BatchPage,
  type BatchStatus,
  MAX_BATCH_PAGE,
} from './queue/batch.js';
export type { ChildPage, FanOut, Handler, Handlers, JobContext } from './queue/context.js';
export type { QueueEvent } from './queue/events.js';
export { type ContinuationSpec, type FanOutOptions, MAX_FAN_OUT } from './queue/fanout.js';
export { type FlowChildSpec, type FlowNode, type FlowSpec, MAX_FLOW_JOBS } from './queue/flow.js';
export type { Attempt, ChildCounts, FailurePolicy, Job, JobState, Priority } from './queue/job.js';
export { FINAL_STATES, JOB_STATES } from './queue/job.js';
export type { BulkResult, JobAction, JobOutcome, JobTarget } from './queue/job-actions.js';
export type { Durability, QueueOptions } from './queue/options.js';
export { type CleanOptions, type JobTreeNode, Queue, type RetryFailedOptions } from './queue/queue.js';
export type { EventsOptions, GroupInfo, JobsOptions, QueueStats, WorkerInfo } from './queue/reader.js';
export { type ReshardOptions, type ReshardReport, reshard } from './queue/reshard.js';
export type { TaskName, TaskSpec, UntypedTasks } from './queue/tasks.js';
export type { DedupOptions, SubmitSpec } from './queue/validate.js';
export type { ConnectionOption } from './redis/connection.js';
export { loadLibrary, ScriptLoadError } from './redis/library.js';
export type { ClockJump } from './redis/server-clock.js';
export * from './timers/index.js';
export type { Health, HealthCheck } from './util/health.js';
