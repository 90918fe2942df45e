/** The one small interface every measured system is driven through. */

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

export function payload(t = 0): Payload {
  return { t, p: PADDING };
}

export interface JobIn {
  /** Tenant. Rota and GroupMQ use it as the job's group; BullMQ puts every tenant in one queue. */
  group: string;
  data: Payload;
}

/** Called once per run of a job; `id` is the system's job id. */
export type BenchHandler = (id: string, group: string, data: Payload) => Promise<void> | void;

export interface ExecutorHandle {
  close(): Promise<void>;
}

export interface ExecutorOptions {
  concurrency: number;
  handler: BenchHandler;
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
