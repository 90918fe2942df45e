/**
 * Data migrations (`rota migrate`): an ordered list of steps, each from one schema to the next,
 * run shard by shard in bounded batches while executors of both versions work. Each batch is one
 * atomic script that rewrites its records idempotently and records the step's SCAN cursor in the
 * shard's `meta` hash, compared and set, so a migrate killed at any point goes on where it stopped
 * and two at once never rewrite a record twice. The last batch of a step raises the shard's schema.
 * The version rule and how to add a step: docs/upgrading.md.
 */

import type { Cluster, Redis } from 'ioredis';
import { MigrationPathError, ReshardInProgressError, ValidationError } from '../errors.js';
import { type MigrationState, MigrationStore } from '../redis/migration-store.js';
import { readLayoutOf } from '../redis/schema.js';
import { shardNumbers } from '../redis/shards.js';
import { SCHEMA_VERSION } from '../redis/wire.js';

/**
 * A step that rewrites one field of every job hash: copies field `read` to field `write` where the
 * job has no `write` yet, and with `move` deletes `read` (lua/migrate-job-field.lua).
 */
export interface JobFieldStep {
  kind: 'job-field';
  /** The schema it leads from, and to (from + 1). */
  from: number;
  to: number;
  /** The oldest build schema that reads data of schema `to` (from: builds of the old schema go on working). */
  compat: number;
  /** What it changes, in a line. */
  description: string;
  read: string;
  write: string;
  move: boolean;
}

/** One step of the migration list. */
export type MigrationStep = JobFieldStep;

/** The steps this build ships, in order: none yet (schema 7 is 1.0's, the first frozen format). */
const STEPS: MigrationStep[] = [];

/** The migration steps, in order of their schemas. */
export function migrationSteps(): readonly MigrationStep[] {
  return STEPS;
}

/**
 * Adds a step to the list (a build's own steps are written into it; tests add theirs). It must
 * lead from one schema to the next, from the last step's (or this build's) schema.
 * @throws {ValidationError} for a step that does not follow on.
 */
export function registerMigrationStep(step: MigrationStep): void {
  const last = STEPS.at(-1)?.to ?? SCHEMA_VERSION;
  if (step.from !== last || step.to !== step.from + 1 || step.compat > step.from + 1 || step.compat < 1) {
    throw new ValidationError('step', `a step must lead from schema ${last} to ${last + 1} (compat at most ${last + 1})`);
  }
  STEPS.push(step);
}

/** The newest schema a migration can lead to: this build's, or its last step's. */
export function newestSchema(steps: readonly MigrationStep[] = STEPS): number {
  return Math.max(SCHEMA_VERSION, steps.at(-1)?.to ?? 0);
}

/** A step's progress on a shard, as each batch reports it. */
export interface StepProgress {
  shard: number;
  from: number;
  to: number;
  description: string;
  /** SCAN steps (batches) run, and keys they read, by this process. */
  batches: number;
  scanned: number;
  /** Records the step rewrote on the shard, by any migrate process. */
  rewritten: number;
  complete: boolean;
}

/** What a migration of one shard did, or with `dryRun` would do. */
export interface ShardReport {
  shard: number;
  /** The schema the shard recorded before (null: never used, nothing to migrate). */
  schema: string | null;
  /** The schema after (with `dryRun`, what it would be). */
  after: string | null;
  /** A step found under way (a migrate was killed), resumed. */
  resumed: number | null;
  steps: Array<{ from: number; to: number; description: string; keys: number; rewritten: number }>;
}

/** Options of {@link migrateQueue}. */
export interface MigrateOptions {
  /** The schema to migrate to (default {@link newestSchema}). */
  to?: number;
  /** Keys one SCAN step (and so one batch's script) reads, about (default 200). */
  batch?: number;
  /** Report what would be done (which steps, how many keys), writing nothing. */
  dryRun?: boolean;
  /** Called after each batch. */
  onProgress?: (p: StepProgress) => void;
  /** The steps to run (default {@link migrationSteps}). */
  steps?: readonly MigrationStep[];
}

/** The default keys a batch reads. */
export const MIGRATE_BATCH_KEYS = 200;
/** Most keys a batch may read (its script then holds Redis some milliseconds). */
export const MAX_MIGRATE_BATCH_KEYS = 5000;

/**
 * Migrates every shard of queue `queue` to schema `to`, step by step (see the module's comment).
 * @throws {ValidationError} for a `to` no step leads to, or a bad batch size.
 * @throws {MigrationPathError} when a shard's schema has no step leading on from it.
 * @throws {ReshardInProgressError} while the queue's shard count is being changed.
 */
export async function migrateQueue(client: Redis | Cluster, queue: string, opts: MigrateOptions = {}): Promise<ShardReport[]> {
  const steps = opts.steps ?? STEPS;
  const newest = newestSchema(steps);
  const to = opts.to ?? newest;
  if (!Number.isInteger(to) || to < 1 || to > newest) {
    throw new ValidationError('--to', `this Rota migrates to schema ${newest} at most (asked: ${String(to)})`);
  }
  const batch = opts.batch ?? MIGRATE_BATCH_KEYS;
  if (!Number.isInteger(batch) || batch < 1 || batch > MAX_MIGRATE_BATCH_KEYS) {
    throw new ValidationError('--batch', `must be a whole number from 1 to ${MAX_MIGRATE_BATCH_KEYS}`);
  }
  const layout = await readLayoutOf(client, queue);
  if (layout.reshard !== null) throw new ReshardInProgressError(queue, layout.shards ?? 1, layout.reshard);
  const shards = layout.shards ?? 1;
  const stores = shardNumbers(shards).map((s) => new MigrationStore(client, queue, s, shards));
  // every shard's plan first: a shard no step leads on from is refused before anything is written
  const plans = await Promise.all(stores.map(async (store) => ({ store, state: await store.state() })));
  const planned = plans.map(({ store, state }) => ({ store, state, steps: planOf(queue, state, to, steps) }));
  const reports: ShardReport[] = [];
  for (const { store, state, steps: plan } of planned) {
    const report: ShardReport = {
      shard: store.shard,
      schema: state.schema,
      after: plan.length ? String(plan[plan.length - 1].to) : state.schema,
      resumed: state.step === null ? null : Number(state.step),
      steps: [],
    };
    for (const step of plan) {
      const keys = opts.dryRun ? await countJobs(store, batch) : 0;
      const rewritten = opts.dryRun ? 0 : await runStep(store, step, batch, opts.onProgress);
      report.steps.push({ from: step.from, to: step.to, description: step.description, keys, rewritten });
    }
    reports.push(report);
  }
  return reports;
}

/** The steps that take a shard in `state` to schema `to`, in order (none for a shard never used). */
function planOf(queue: string, state: MigrationState, to: number, steps: readonly MigrationStep[]): MigrationStep[] {
  if (state.schema === null) return [];
  let at = Number(state.schema);
  if (!Number.isInteger(at)) throw new MigrationPathError(queue, state.schema, to);
  const plan: MigrationStep[] = [];
  while (at < to) {
    const step = steps.find((s) => s.from === at);
    if (!step) throw new MigrationPathError(queue, String(at), to);
    plan.push(step);
    at = step.to;
  }
  if (state.step !== null && !plan.some((s) => String(s.to) === state.step)) {
    // a step under way that this migration does not run (another build's): refuse, not skip
    throw new MigrationPathError(queue, `${state.schema} (a step to ${state.step} under way)`, to);
  }
  return plan;
}

/** The job hashes of a shard, counted in SCAN steps of about `batch` keys (reads only). */
async function countJobs(store: MigrationStore, batch: number): Promise<number> {
  let cursor = '0';
  let n = 0;
  do {
    const scan = await store.scanJobs(cursor, batch);
    n += scan.ids.length;
    cursor = scan.cursor;
  } while (cursor !== '0');
  return n;
}

/** Runs `step` on a shard from where its progress stands; resolves to the records it rewrote. */
async function runStep(
  store: MigrationStore,
  step: MigrationStep,
  batch: number,
  onProgress?: (p: StepProgress) => void,
): Promise<number> {
  const state = await store.state();
  if (state.schema !== null && Number(state.schema) >= step.to) return 0; // done meanwhile
  let cursor = state.step === String(step.to) && state.cursor !== null ? state.cursor : '0';
  const progress: StepProgress = {
    shard: store.shard,
    from: step.from,
    to: step.to,
    description: step.description,
    batches: 0,
    scanned: 0,
    rewritten: state.done,
    complete: false,
  };
  for (;;) {
    const scan = await store.scanJobs(cursor, batch);
    const reply = await store.jobFieldBatch({
      fromSchema: step.from,
      toSchema: step.to,
      compat: step.compat,
      cursor,
      next: scan.cursor,
      ids: scan.ids,
      read: step.read,
      write: step.write,
      move: step.move,
    });
    if (reply.status === 'moved') {
      // another migrate went on meanwhile: go on from where it stands
      cursor = reply.cursor;
      continue;
    }
    if (reply.status === 'stale') {
      if (Number(reply.schema) >= step.to) break; // another migrate completed the step
      throw new MigrationPathError(store.queue, reply.step ? `${reply.schema} (a step to ${reply.step})` : reply.schema, step.to);
    }
    progress.batches++;
    progress.scanned += scan.ids.length;
    progress.rewritten = reply.done;
    progress.complete = reply.complete;
    onProgress?.({ ...progress });
    if (reply.complete) break;
    cursor = scan.cursor;
  }
  return progress.rewritten;
}
