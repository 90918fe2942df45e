/** The one small interface every measured system is driven through. */
import type { RedisOptions } from 'ioredis';

export type SystemName = 'rota' | 'bullmq' | 'groupmq';
export const SYSTEMS: SystemName[] = ['rota', 'bullmq', 'groupmq'];

/** The benchmark payload: a timestamp and padding, about 100 bytes serialized. */
export interface Payload {
  /** When the job was submitted (ms, see measure.nowMs). */
  t: number;
  /** Padding up to the payload size. */
  p: string;
}

export const PADDING = 'x'.repeat(78);

/** The padding that makes a payload of about `bytes` bytes serialized (the default: 100). */
export function paddingFor(bytes: number): string {
  return bytes === 100 ? PADDING : 'x'.repeat(Math.max(0, bytes - 22));
}

export function payload(t = 0, padding = PADDING): Payload {
  return { t, p: padding };
}

/**
 * Where a system connects: a Redis URL, or connection options (user, password, database, TLS as
 * PEM text, so that it passes to a child process); with `nodes`, the startup nodes of a Redis
 * Cluster (Rota alone then, with `shards` shards).
 */
export type Endpoint = string | { options: RedisOptions; nodes?: Array<{ host: string; port: number }>; shards?: number };

export interface JobIn {
  /** Tenant. Rota and GroupMQ use it as the job's group; BullMQ puts every tenant in one queue. */
  group: string;
  data: Payload;
}

/** Called once per run of a job; `id` is the system's job id. */
export type BenchHandler = (id: string, group: string, data: Payload) => Promise<void> | void;

export interface ExecutorHandle {
  close(): Promise<void>;
  /** CPU time (µs) of processes the executor started for its handlers (Rota's isolated tasks in processes), beside its own. */
  childCpuUs?(): number;
}

export interface ExecutorOptions {
  concurrency: number;
  handler: BenchHandler;
  /**
   * Rota only: run a no-op handler isolated in a pool of threads or processes (all started
   * first); `handler` is then told of each job as its run completes, on the main thread.
   */
  isolate?: 'thread' | 'process';
}

/** Producer and executor side of one system, bound to one queue on one Redis. */
export interface SystemAdapter {
  readonly name: SystemName;
  /** Submits one job and waits for its acknowledgement. */
  submit(job: JobIn): Promise<void>;
  /** Submits many jobs the way the system's users would in bulk. */
  submitBulk(jobs: JobIn[]): Promise<void>;
  /** Starts an executor (worker) in this process. */
  startExecutor(opts: ExecutorOptions): Promise<ExecutorHandle>;
  /** Number of jobs waiting to be taken. */
  waiting(): Promise<number>;
  close(): Promise<void>;
}

/** Completed jobs every system keeps (Rota's default; BullMQ removeOnComplete.count; GroupMQ keepCompleted). */
export const KEEP_COMPLETED = 10_000;
export const KEEP_FAILED = 100_000;

/** The `connection` a Rota class takes for a single-server endpoint (a Cluster's is refused). */
export function connectionOf(at: Endpoint): string | RedisOptions {
  if (typeof at === 'string') return at;
  if (at.nodes) throw new Error('this workload runs on a single server, not a Cluster');
  return at.options;
}
