/**
 * The executor's delivery side: sends what runs produce to the queue in batches (their starts,
 * outcomes, progress and log lines), sends an outcome again after a backoff until the queue takes
 * it, and names the leases the heartbeat extends meanwhile. Finish calls carry the take side's
 * takes for the slots they free (finish-and-take).
 */
import type { Redis } from 'ioredis';
import { submitCommitted } from '../queue/fanout.js';
import type { Job, JobState } from '../queue/job.js';
import { packValue } from '../queue/validate.js';
import { type HistoryRun, historyFields } from '../redis/history.js';
import { addRun, type Finished as FinishReply, type FinishSettings, type QueueStore } from '../redis/queue-store.js';
import { byShard } from '../redis/shards.js';
import { type SideWrite, sendSideWrites } from '../redis/side-writes.js';
import type { StringValue } from '../redis/string-array.js';
import { OUTCOME, RUN_WIDTH } from '../redis/wire.js';
import { Batcher } from '../util/batcher.js';
import type { Dictionary } from '../util/churn.js';
import { GroupHistory } from './group-history.js';
import type { HeldJob } from './heartbeat.js';
import { shardOf } from './job-shard.js';
import { MAX_LOG_LINES } from './log-limits.js';
import { ProgressThrottle } from './progress.js';
import { type ReportTo, reportEnd } from './reports.js';
import type { Outcome, Run } from './run.js';
import type { Outcomes } from './taker.js';

/** A run's outcome on its way to the queue. */
interface RunOutcome {
  run: Run;
  outcome: Outcome;
  /** The run's start was not sent yet: the finish call applies it first. */
  unstarted?: boolean;
  /** A job taken but never started, handed back (its refusal is no lost work: nothing ran). */
  released?: boolean;
  /**
   * The state an earlier send of this outcome ended the job in, when the primary applied it but
   * the replicas were not known to have it (durability 'replicated'): a refusal of the resend
   * means the job moved on from that state since, not that the run's lease was lost.
   */
  applied?: JobState;
  /** Counted in the queue's history by an earlier send (a resend is not counted again). */
  counted?: boolean;
}

/** What the finish calls need of the take side (taker.ts). */
export interface CarriedTakes {
  /** The take a round of finish calls, one per shard in `shards`, carries: `want` jobs from `shard`. */
  forFinishes(shards: number[]): { shard: number; want: number };
  /** Times finish call `reply`, and follows the take of `want` jobs from `shard` it carries. */
  carry(shard: number, want: number, reply: Promise<FinishReply>): Promise<FinishReply>;
  /** Outcomes were sent: their slots are free. */
  wakeLoop(): void;
  /** Jobs of a task this executor lacks were passed on (delayed) for the executors that have it. */
  passedOn(): void;
}

export interface DeliveryDeps extends ReportTo {
  /** Called after a finish call of shard `shard` that ended children's runs (their ends may go to other queues). */
  childrenEnded?: (shard: number) => void;
  /** The executor's connection (side writes go through it in a pipeline). */
  client: Redis;
  /** Each shard's script calls, by shard number. */
  stores: QueueStore[];
  /** What every finish call asks for besides its runs. */
  settings: FinishSettings;
  leaseMs: number;
  maxResultBytes: number;
  /** How many finished jobs the finish calls keep. */
  keep: { succeeded: number; failed: number };
  progressIntervalMs: number;
  /** How long a job's task may have no live executor before the job fails (the payload of an `unhandled` outcome). */
  unknownTaskGraceMs: number;
  /** Runs in progress by job id: their leases are held too. */
  runs: Dictionary<Run>;
  takes: CarriedTakes;
  /** close() has begun: outcomes refused are sent again at once. */
  closing(): boolean;
  /** Runs whose lease the queue says is lost (by job id and lease token). */
  onLost(lost: HeldJob[]): void;
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends of one batch of side writes (log lines, staging deletions) before it is dropped, and the first backoff (doubling). */
const SIDE_WRITE_ATTEMPTS = 3;
const SIDE_WRITE_BACKOFF_MS = 100;

/** Outcomes that fail a run (the job is retried or fails). */
const FAILING: ReadonlySet<string> = new Set([OUTCOME.failed, OUTCOME.permanent]);

/**
 * The history counts of the runs of `batch` that ran and were not counted before (see
 * src/redis/history.ts): added up here, so that the finish call adds each count once.
 */
function historyOf(batch: RunOutcome[], groupEnded: (group: string) => void): StringValue[] {
  const runs: HistoryRun[] = [];
  for (const f of batch) {
    if (f.counted || f.released || f.run.ranMs === undefined) continue;
    f.counted = true;
    runs.push({ task: f.run.job.task, ms: f.run.ranMs, failed: FAILING.has(f.outcome.code) });
    groupEnded(f.run.job.group);
  }
  return runs.length > 0 ? historyFields(runs) : [];
}

/** The outcomes, those of fan-out children last. */
function childrenLast(batch: RunOutcome[]): RunOutcome[] {
  return [...batch.filter((f) => f.run.job.parent === undefined), ...batch.filter((f) => f.run.job.parent !== undefined)];
}

export class Delivery implements Outcomes {
  private readonly finishes: Batcher<RunOutcome>;
  private readonly starts: Batcher<Run>;
  private readonly sideWrites: Batcher<SideWrite>;
  /** Progress updates to write (throttled per run by `throttle`), one progress.lua call per batch. */
  private readonly progressWrites: Batcher<{ id: string; progress: number; shard: number }>;
  private readonly throttle: ProgressThrottle;
  /** The runs each group ended, sent to the per-group history every few seconds. */
  private readonly groupHistory: GroupHistory;
  /**
   * Outcomes whose finish call failed (Redis refused it, or did not answer): each is sent again
   * after a backoff, and its run's lease is extended by the heartbeat meanwhile, so a job runs
   * again only when its lease is truly lost.
   */
  private readonly undelivered = new Set<RunOutcome>();
  private redeliveryTimer: NodeJS.Timeout | null = null;
  /** Finish calls failed in a row: the backoff of the next redelivery. */
  private finishFailures = 0;
  /** close() gave up on Redis: outcomes are no longer sent again. */
  private over = false;
  /** Children of fan-outs this executor committed and is submitting (close() lets them finish). */
  private readonly fanOuts = new Set<Promise<void>>();
  /** Side writes dropped after their sends failed, since the executor started (their warnings count them). */
  private droppedSideWrites = 0;

  constructor(private readonly d: DeliveryDeps) {
    this.finishes = new Batcher((batch) => this.sendFinishes(batch), { onSent: () => d.takes.wakeLoop() });
    this.starts = new Batcher((batch) => this.sendStarts(batch));
    this.progressWrites = new Batcher(async (updates) => {
      try {
        await Promise.all(
          byShard(updates, d.stores.length, (u) => u.shard).map(([shard, part]) => d.stores[shard].progress(part)),
        );
      } catch (err) {
        d.onError(err);
      }
    });
    this.throttle = new ProgressThrottle(d.progressIntervalMs, (job, n) => {
      this.progressWrites.add({ id: job.id, progress: n, shard: shardOf(job) });
      if (d.events.listenerCount('progress') > 0) d.events.emit('progress', { ...job, progress: n }, n);
    });
    this.sideWrites = new Batcher((writes) => this.sendSideWrites(writes));
    this.groupHistory = new GroupHistory((shard, counts) => d.stores[shard].addGroupHistory(counts), d.onError);
  }

  get waiting(): boolean {
    return this.finishes.waiting;
  }

  get busy(): boolean {
    return this.finishes.busy;
  }

  drain(): Promise<void> {
    return this.finishes.drain();
  }

  release(jobs: Job[]): void {
    for (const job of jobs) this.finishes.add({ run: { job } as Run, outcome: { code: 'r' }, released: true });
  }

  /** A run started: its start goes with the next batch of starts. */
  started(run: Run): void {
    this.starts.add(run);
  }

  /**
   * A run ended with `outcome`; a run that ended before its start was sent (a quick one) has both
   * sent in one call.
   */
  ended(run: Run, outcome: Outcome): void {
    this.finishes.add({ run, outcome, unstarted: this.starts.withdraw(run) });
  }

  /** A line a run logged (ctx.log), written with the other side writes. */
  log(job: Job, line: string): void {
    const { keys } = this.d.stores[shardOf(job)];
    this.sideWrites.add({ kind: 'log', keys, id: job.id, line: `${new Date().toISOString()} ${line}`, maxLines: MAX_LOG_LINES });
  }

  /** Progress a run reported (ctx.progress), throttled per run. */
  progress(job: Job, value: number): void {
    this.throttle.report(job, value);
  }

  /**
   * A run is over: its last progress is sent now, ahead of its outcome on the same connection (a
   * finish batch already scheduled in this turn would otherwise go first, and the progress script
   * leaves a job that ended as it is).
   */
  progressEnded(id: string): void {
    this.throttle.end(id);
    if (this.progressWrites.waiting) this.progressWrites.flush();
  }

  /**
   * The runs of shard `shard` whose leases its heartbeat extends: those running, and those whose
   * outcome waits to be delivered.
   */
  held(shard: number): HeldJob[] {
    const held: HeldJob[] = [];
    for (const r of this.d.runs.values()) if (shardOf(r.job) === shard) held.push({ id: r.job.id, token: String(r.job.takeSeq) });
    for (const f of this.undelivered) {
      if (shardOf(f.run.job) === shard) held.push({ id: f.run.job.id, token: String(f.run.job.takeSeq) });
    }
    return held;
  }

  /**
   * Sends everything still to send (outcomes again until Redis takes them, or giveUp()), and
   * waits for the fan-outs being submitted.
   */
  async flush(): Promise<void> {
    do {
      this.resendUndelivered();
      await this.finishes.drain();
      if (this.undelivered.size > 0) await delay(100);
    } while (this.undelivered.size > 0 && !this.over);
    await this.starts.drain();
    await this.sideWrites.drain();
    await this.progressWrites.drain();
    await this.groupHistory.flush();
    await Promise.all(this.fanOuts);
  }

  /** Stops sending outcomes again (close() gave up on Redis). */
  giveUp(): void {
    this.over = true;
    if (this.redeliveryTimer) clearTimeout(this.redeliveryTimer);
  }

  /** Sends side writes, one pipeline per shard (a Cluster refuses a pipeline across nodes' slots). */
  private async sendSideWrites(writes: SideWrite[]): Promise<void> {
    await Promise.all(
      byShard(writes, this.d.stores.length, (w) => w.keys.shard).map(([, part]) => this.sendShardSideWrites(part)),
    );
  }

  /**
   * Sends one shard's side writes, again after a backoff those Redis refused or that went
   * unanswered (SIDE_WRITE_ATTEMPTS sends in all); then drops them with a warning that counts
   * them. Never rejects: a log line is not worth an executor.
   */
  private async sendShardSideWrites(writes: SideWrite[]): Promise<void> {
    let left = writes;
    for (let attempt = 1; ; attempt++) {
      let err: unknown;
      try {
        ({ refused: left, err } = await sendSideWrites(this.d.client, left));
        if (left.length === 0) return;
      } catch (e) {
        err = e;
      }
      if (attempt < SIDE_WRITE_ATTEMPTS && !this.over) {
        await delay(SIDE_WRITE_BACKOFF_MS * 2 ** (attempt - 1));
        continue;
      }
      this.droppedSideWrites += left.length;
      const reason = err instanceof Error ? err.message : String(err);
      const message =
        `dropped ${left.length} log line(s) or staging deletion(s) after ${attempt} failed send(s) ` +
        `(${this.droppedSideWrites} dropped since the executor started): ${reason}`;
      this.d.logger?.warn(
        { worker: this.d.workerId, dropped: left.length, droppedTotal: this.droppedSideWrites, err: reason },
        message,
      );
      this.d.onError(new Error(message, { cause: err }));
      return;
    }
  }

  private async sendStarts(batch: Run[]): Promise<void> {
    await Promise.all(
      byShard(batch, this.d.stores.length, (r) => shardOf(r.job)).map(([shard, part]) => this.sendShardStarts(shard, part)),
    );
  }

  private async sendShardStarts(shard: number, batch: Run[]): Promise<void> {
    const jobs: Job[] = [];
    for (const r of batch) jobs.push(r.job);
    try {
      const { startedAt, lost, dropped } = await this.d.stores[shard].start(this.d.leaseMs, jobs);
      for (const r of batch) r.job.started = startedAt;
      if (lost.length) {
        const gone = new Set(lost);
        const runs: HeldJob[] = [];
        for (const r of batch) if (gone.has(r.job.id)) runs.push({ id: r.job.id, token: String(r.job.takeSeq) });
        this.d.onLost(runs);
      }
      // Periodic runs wait for this answer: a run dropped by its task's tolerance ends cancelled unrun.
      const drop = new Set(dropped);
      for (const r of batch) r.open(!drop.has(r.job.id));
    } catch (err) {
      this.d.onError(err);
      for (const r of batch) r.open(true);
    }
  }

  /**
   * Acknowledges finished runs (one call per shard they came from), and takes jobs for the slots
   * they freed: from the shard next in turn, in the same call when some of the runs are that
   * shard's (always, on an unsharded queue), in a take of its own otherwise.
   */
  private async sendFinishes(sent: RunOutcome[]): Promise<void> {
    const parts = byShard(sent, this.d.stores.length, (f) => shardOf(f.run.job));
    const take = this.d.takes.forFinishes(parts.map(([shard]) => shard));
    await Promise.all(parts.map(([shard, part]) => this.sendShardFinishes(shard, part, shard === take.shard ? take.want : 0)));
  }

  /** Acknowledges finished runs of shard `shard`, and takes `want` jobs from it in the same call. */
  private async sendShardFinishes(shard: number, sent: RunOutcome[], want: number): Promise<void> {
    // The runs of fan-out children go last (their parents count them).
    let children = 0;
    for (const f of sent) if (f.run.job.parent !== undefined) children++;
    const batch = children === 0 ? sent : childrenLast(sent);
    const runs: StringValue[] = [];
    // (the runs of periodic tasks: their number in `runs` and their task, see QueueStore.finish)
    const tracked: StringValue[] = [];
    // (the runs of jobs with a dedup key: their number, group and key, released as they end)
    const dedups: StringValue[] = [];
    // (the runs of batch jobs: their number and batch, counted by their batches as they end)
    const batches: StringValue[] = [];
    for (const f of batch) {
      if (f.run.job.batch !== undefined) batches.push(String(runs.length / RUN_WIDTH + 1), f.run.job.batch);
      if (f.run.job.tracker) tracked.push(String(runs.length / RUN_WIDTH + 1), f.run.job.tracker);
      if (f.run.job.dedupKey !== undefined) dedups.push(String(runs.length / RUN_WIDTH + 1), f.run.job.group, f.run.job.dedupKey);
      let payload: string | Buffer = '';
      if (f.outcome.code === OUTCOME.success || f.outcome.code === OUTCOME.fannedOut) {
        try {
          payload = packValue(f.outcome.result, this.d.maxResultBytes, 'result');
        } catch (err) {
          f.outcome = { code: OUTCOME.permanent, error: err as Error };
        }
      }
      if (f.outcome.code === OUTCOME.unhandled) payload = String(this.d.unknownTaskGraceMs);
      else if (f.outcome.error) payload = f.outcome.error.stack ?? String(f.outcome.error);
      addRun(runs, f.run.job.id, String(f.run.job.takeSeq), f.outcome.code, f.unstarted ?? false, payload);
    }
    const reply = this.d.takes.carry(
      shard,
      want,
      this.d.stores[shard].finish(
        this.d.settings,
        this.d.keep,
        want,
        runs,
        children,
        historyOf(batch, (group) => this.groupHistory.add(shard, group)),
        tracked,
        dedups,
        batches,
      ),
    );
    let r: FinishReply;
    try {
      r = await reply;
    } catch (err) {
      this.d.onError(err);
      this.redeliver(batch);
      return;
    }
    const { finishedAt: at, states } = r;
    if (children > 0) this.d.childrenEnded?.(shard);
    if (r.unreplicated) {
      this.unreplicated(batch, r.unreplicated, at, states);
      return;
    }
    this.finishFailures = 0;
    const refused: RunOutcome[] = [];
    batch.forEach((f, i) => {
      // a start applied by this call is stamped with its time, as the script did
      if (f.unstarted && f.applied === undefined) f.run.job.started = at;
      const state = states[i] ?? '';
      if (state === '' && f.applied !== undefined) refused.push(f);
      else this.delivered(f, state);
    });
    if (refused.length > 0) await this.confirmApplied(shard, refused);
  }

  /**
   * Resends refused of outcomes an earlier send applied: the replicas have this call (it was
   * replicated), but the earlier send may have been applied on a primary that failed over
   * since, its write lost. Each outcome counts as delivered only when its job still ended in
   * that state by this run (its lease token); otherwise the run's outcome was lost, and it is
   * reported as a refused completion (the job runs again, or ran elsewhere meanwhile).
   */
  private async confirmApplied(shard: number, refused: RunOutcome[]): Promise<void> {
    let ended: Array<{ state: string | null; token: string | null }>;
    try {
      ended = await this.d.stores[shard].endedBy(refused.map((f) => f.run.job.id));
    } catch (err) {
      this.d.onError(err);
      this.redeliver(refused);
      return;
    }
    refused.forEach((f, i) => {
      const { state, token } = ended[i];
      if (state !== f.applied || token !== String(f.run.job.takeSeq)) f.applied = undefined;
      this.delivered(f, '');
    });
  }

  /**
   * A finish call the primary applied, but that the replicas are not known to have: its runs'
   * outcomes are sent again (a failover may lose them), each remembering the state it ended in;
   * those it refused are reported now (the refusal changed nothing).
   */
  private unreplicated(batch: RunOutcome[], err: Error, at: number, states: Array<JobState | ''>): void {
    this.d.onError(err);
    const again: RunOutcome[] = [];
    batch.forEach((f, i) => {
      const state = states[i] ?? '';
      if (state === '' && f.applied === undefined) {
        this.delivered(f, state);
        return;
      }
      if (f.unstarted && f.applied === undefined) f.run.job.started = at;
      if (state !== '') f.applied = state;
      again.push(f);
    });
    if (again.length > 0) this.redeliver(again);
  }

  /**
   * A run's outcome delivered: `answered` is what the finish call answered for it. A refused
   * resend of an outcome applied before ends in the state that first send gave it.
   */
  private delivered(f: RunOutcome, answered: JobState | ''): void {
    const state = answered === '' && f.applied !== undefined ? f.applied : answered;
    if (state === 'delayed' && f.outcome.code === OUTCOME.unhandled) this.d.takes.passedOn();
    if (f.run.fanned) this.fannedOutEnded(f, state);
    reportEnd(this.d, f.run.job, f.outcome, state, f.released ?? false);
  }

  /**
   * A run that fanned out was finished: when it succeeded, its children were committed and are
   * submitted now, chunk by chunk (the recoverer of any executor finishes the job should this one
   * die); otherwise its staged children are deleted.
   */
  private fannedOutEnded(f: RunOutcome, state: JobState | ''): void {
    const job = f.run.job;
    const store = this.d.stores[shardOf(job)];
    if (state === 'success' && f.outcome.code === OUTCOME.fannedOut) {
      const p: Promise<void> = submitCommitted(store, job.id)
        .catch((err) => this.d.onError(err))
        .finally(() => this.fanOuts.delete(p));
      this.fanOuts.add(p);
    } else if (state !== '' && state !== 'success') {
      this.sideWrites.add({ kind: 'dropStaging', keys: store.keys, id: job.id, token: String(job.takeSeq) });
    }
  }

  /** Sends `batch` again after a backoff (100 ms, doubling, 5 s at most); at once while closing. */
  private redeliver(batch: RunOutcome[]): void {
    if (this.over) return;
    for (const f of batch) this.undelivered.add(f);
    if (this.redeliveryTimer) return;
    const ms = this.d.closing() ? 0 : Math.min(100 * 2 ** this.finishFailures++, 5000);
    this.redeliveryTimer = setTimeout(() => this.resendUndelivered(), ms);
  }

  private resendUndelivered(): void {
    if (this.redeliveryTimer) clearTimeout(this.redeliveryTimer);
    this.redeliveryTimer = null;
    const again = [...this.undelivered];
    this.undelivered.clear();
    for (const f of again) this.finishes.add(f);
  }
}
