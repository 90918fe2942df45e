/**
 * Rota: a fair, distributed job queue and periodic-task scheduler for Redis.
 * @packageDocumentation
 */
export { Queue, type QueueOptions, type GroupInfo, type WorkerInfo, type QueueStats } from './queue/queue.js';
export { Worker, LeaseLostError, type WorkerOptions, type WorkerEvents, type JobLogger } from './queue/worker.js';
export { installShutdownHandlers, type ShutdownOptions } from './queue/shutdown.js';
export { createLogger } from './observability/logger.js';
export { serveMetrics, type MetricsOptions, type MetricsServer } from './observability/metrics.js';
export type { Job, JobState, Priority } from './queue/job.js';
export { JOB_STATES, FINAL_STATES } from './queue/job.js';
export type { SubmitSpec } from './queue/validate.js';
export type { JobContext, Handler, Handlers } from './queue/context.js';
export type { QueueEvent } from './queue/events.js';
export type { Keep } from './queue/recoverer.js';
export type { ConnectionOption } from './redis/connection.js';
export { RotaError, ValidationError, PayloadTooLargeError, PermanentError, TimeoutError, UnknownTaskError, SchemaMismatchError } from './errors.js';
export * from './periodic/index.js';
export * from './timers/index.js';
