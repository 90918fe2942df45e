/**
 * The periodic scheduler's storage contract: one method per periodic Lua script
 * (lua/periodic-*.lua), named arguments in, a decoded reply out. The periodic keys live below the
 * queue's prefix and the scripts write the queue's jobs, so a periodic store shares its queue's
 * store: the same client, and the same schema check (one `meta` per queue, one version for both).
 */
import type { Redis } from 'ioredis';
import { serverTime } from './connection.js';
import { type PeriodicKeys, periodicKeys } from './keys.js';
import type { Arg } from './library.js';
import { execChecked } from './pipeline.js';
import type { QueueStore } from './queue-store.js';
import { CLAIM_FIELDS, STAGE_FIELDS } from './wire.js';

export type ClaimField = (typeof CLAIM_FIELDS)[number];
export type StageField = (typeof STAGE_FIELDS)[number];

/** A task claimed by periodic-claim: its id, the claim's token, and its fields ('' when unset; args as packed bytes). */
export type ClaimedTask = { id: string; token: string } & { [K in ClaimField]: K extends 'args' ? Buffer | string : string };

/** A periodic-stage record: the fields of STAGE_FIELDS (see ./wire.ts), as strings or bytes. */
export type StageRecord = Record<StageField, string | Buffer>;

/** The fields of a stage record that repeat its task's, as the claim read them. */
type ClaimedPart = Pick<
  StageRecord,
  Exclude<
    StageField,
    | 'id'
    | 'token'
    | 'triggered'
    | 'nextrun'
    | 'period'
    | 'missed'
    | 'missedFirst'
    | 'missedLast'
    | 'occurrences'
    | 'failure'
    | 'excluded'
    | 'dues'
    | 'runs'
    | 'ended'
    | 'idSuffix'
  >
>;

/** The part of a stage record that repeats the claimed task's fields (`storedPeriod` is its `period`). */
export function claimedPart(t: ClaimedTask): ClaimedPart {
  return {
    overlap: t.overlap,
    rule: t.rule,
    enabled: t.enabled,
    storedPeriod: t.period,
    task: t.task,
    group: t.group,
    args: t.args,
    subject: t.subject,
    submitter: t.submitter,
    priority: t.priority,
    maxRetries: t.maxRetries,
    maxRuntime: t.maxRuntime,
    staged: t.staged,
  };
}

/** The answer of a claim: the scheduler-clock now, the earliest nextrun and staged scores left (null: none), the tasks. */
export interface Claim {
  now: number;
  earliest: number | null;
  staged: number | null;
  tasks: ClaimedTask[];
  /** Backward jumps of the server's clock counted (p:clock; lua/includes/periodicClock.lua). */
  epoch: number;
  /** Interval tasks are still being moved back after a backward jump: claim again at once. */
  walking: boolean;
  /**
   * When the schedulers' current unbroken run of claims and releases began (ms, claims' clock): the catch-up policy applies
   * only to occurrences already past the misfire grace then (lua/includes/periodicClock.lua).
   */
  since: number;
}

/** A task's timer as periodic-upsert writes it. */
export interface UpsertTask {
  id: string;
  /** Listed in p:all (an upsert), or not (an event rule's pending run). */
  listed: boolean;
  /** Next occurrence for the new timer (ms); null when the timer never elapses again. */
  nextrun: number | null;
  enabled: boolean;
  now: number;
  /**
   * For an event rule's pending run, the event's time (ms): the run replaces the subject's run due
   * earlier, and nothing changes when the subject's newest run is due at `nextrun` or later (an
   * older event arriving after a newer one). Null for a task definition.
   */
  eventAt: number | null;
  /** The task hash's fields: field, value pairs. */
  fields: Arg[];
}

/**
 * One queue's periodic script calls.
 * @example
 * const periodic = new PeriodicStore(new QueueStore(client, 'mail', { maxEvents: 10_000 }));
 */
export class PeriodicStore {
  readonly keys: PeriodicKeys;
  readonly client: Redis;

  constructor(readonly queue: QueueStore) {
    this.keys = periodicKeys(queue.queue);
    this.client = queue.client;
  }

  /**
   * Renews scheduler replica `id` in `p:replicas` until `ttlMs` past the server's time, dropping
   * the entries that expired, and writes its record (`info` with `beat`, the server's time, added)
   * with the same TTL: one MULTI on the home shard's slot.
   */
  async beatReplica(id: string, ttlMs: number, info: Record<string, unknown>): Promise<void> {
    const now = await serverTime(this.client);
    await execChecked(
      this.client
        .multi()
        .zremrangebyscore(this.keys.replicas, '-inf', now)
        .zadd(this.keys.replicas, now + ttlMs, id)
        .set(this.keys.replica(id), JSON.stringify({ ...info, beat: now }), 'PX', ttlMs),
    );
  }

  /** Removes scheduler replica `id` from `p:replicas`, and its record (it stops). */
  async removeReplica(id: string): Promise<void> {
    await execChecked(this.client.multi().zrem(this.keys.replicas, id).del(this.keys.replica(id)));
  }

  /** Subscribes `subscriber` (a connection in subscriber mode) to the scheduler's wake-up channel. */
  async subscribeWake(subscriber: Redis): Promise<void> {
    await subscriber.subscribe(this.keys.wake);
  }

  /** periodic-upsert: creates or replaces a task; answers whether it was created and its next occurrence. */
  async upsert(t: UpsertTask): Promise<{ created: boolean; nextrun: number | null }> {
    const [created, nextrun] = await this.queue.scripts.fcall<[number, string]>('periodic-upsert', this.keys.nextrun, [
      this.keys.prefix,
      t.id,
      t.listed ? '1' : '0',
      t.nextrun ?? '',
      t.enabled ? '1' : '0',
      t.now,
      t.eventAt ?? '',
      ...t.fields,
    ]);
    return { created: created === 1, nextrun: scoreOf(nextrun) };
  }

  /** periodic-enable: enables a task (next occurrence `nextrun`, null: none); false when there is no such task. */
  async enable(id: string, nextrun: number | null, now: number): Promise<boolean> {
    return (
      (await this.queue.scripts.fcall<number>('periodic-enable', this.keys.nextrun, [
        this.keys.prefix,
        id,
        '1',
        nextrun ?? '',
        now,
      ])) === 1
    );
  }

  /** periodic-enable: disables a task with a note ('' for none); false when there is no such task. */
  async disable(id: string, now: number, note = ''): Promise<boolean> {
    return (
      (await this.queue.scripts.fcall<number>('periodic-enable', this.keys.nextrun, [
        this.keys.prefix,
        id,
        '0',
        '',
        now,
        note,
      ])) === 1
    );
  }

  /**
   * periodic-backfill: backfills one batch of task `id`'s occurrences (ascending): submits them
   * (`allow`) or queues them in its buffer-all backlog, each once unless `force`. Answers how many
   * were submitted or queued and how many had run already, or null when there is no such task.
   */
  async backfill(o: {
    id: string;
    mode: 'allow' | 'buffer-all';
    force: boolean;
    now?: number;
    occurrences: readonly number[];
  }): Promise<{ done: number; already: number } | null> {
    const r = await this.queue.scripts.fcall<[number, number] | null>('periodic-backfill', this.keys.nextrun, [
      this.keys.prefix,
      this.queue.maxEvents,
      o.id,
      o.mode === 'allow' ? 'a' : 'q',
      o.force ? '1' : '',
      o.now ?? '',
      ...o.occurrences,
    ]);
    return r ? { done: Number(r[0]), already: Number(r[1]) } : null;
  }

  /** periodic-remove: removes tasks; answers the ids removed. */
  remove(ids: readonly string[]): Promise<string[]> {
    return this.queue.scripts.fcall<string[]>('periodic-remove', this.keys.nextrun, [this.keys.prefix, 'ids', ...ids]);
  }

  /** periodic-remove: removes every task of an owner; answers the ids removed. */
  removeOwner(owner: string): Promise<string[]> {
    return this.queue.scripts.fcall<string[]>('periodic-remove', this.keys.nextrun, [this.keys.prefix, 'owner', owner]);
  }

  /**
   * periodic-rule: creates or replaces event rule `id` following event `after` (`created` is `now`
   * for a new rule); `fields` are the record's other field, value pairs. Answers the record as
   * stored (field -> bytes).
   */
  async rule(id: string, after: string, now: number, fields: Arg[]): Promise<Record<string, Buffer>> {
    // Binary-safe: the record holds the rule's args (msgpack).
    const flat = await this.queue.scripts.fcall<Buffer[]>(
      'periodic-rule',
      this.keys.rules,
      [this.keys.prefix, id, after, now, ...fields],
      true,
    );
    const record: Record<string, Buffer> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) record[flat[i].toString()] = flat[i + 1];
    return record;
  }

  /** periodic-rule-remove: removes event rule `id` and the pending runs of `owner` (its runs' owner); false when there was no such rule. */
  async removeRule(id: string, owner: string): Promise<boolean> {
    return (await this.queue.scripts.fcall<number>('periodic-rule-remove', this.keys.rules, [this.keys.prefix, id, owner])) === 1;
  }

  /** periodic-trigger: asks for a run now (at `now`, default the server clock); answers the trigger time, or null when there is no such task. */
  async trigger(id: string, now?: number): Promise<number | null> {
    const at = await this.queue.scripts.fcall<number | null>('periodic-trigger', this.keys.nextrun, [
      this.keys.prefix,
      id,
      now ?? '',
    ]);
    return at === null || at === undefined ? null : Number(at);
  }

  /**
   * periodic-claim: claims up to `max` tasks due by now + `lookaheadMs` for `claimTtlMs`, and
   * trims their run histories to `keepCount` entries and `keepAgeMs` (-1: no bound). `now`
   * defaults to the server clock.
   */
  async claim(o: {
    lookaheadMs: number;
    max: number;
    claimTtlMs: number;
    now?: number;
    keepCount: number;
    keepAgeMs: number;
    misfireGraceMs: number;
  }): Promise<Claim> {
    // Binary-safe: the reply holds the tasks' args (msgpack).
    const [now, first, staged, flat, epoch, walking, since] = await this.queue.scripts.fcall<
      [Buffer | number, Buffer, Buffer, Array<Buffer | number>, Buffer | number, Buffer | number, Buffer | number]
    >(
      'periodic-claim',
      this.keys.nextrun,
      [this.keys.prefix, o.lookaheadMs, o.max, o.claimTtlMs, o.now ?? '', o.keepCount, o.keepAgeMs, o.misfireGraceMs],
      true,
    );
    const width = CLAIM_FIELDS.length + 2;
    const tasks: ClaimedTask[] = [];
    for (let i = 0; i + width <= flat.length; i += width) {
      const t: Record<string, string | Buffer> = { id: String(flat[i]), token: String(flat[i + 1]) };
      CLAIM_FIELDS.forEach((field, k) => {
        const v = flat[i + 2 + k];
        t[field] = field === 'args' && Buffer.isBuffer(v) ? v : String(v);
      });
      tasks.push(t as ClaimedTask);
    }
    return {
      now: Number(String(now)),
      earliest: scoreOf(first),
      staged: scoreOf(staged),
      tasks,
      epoch: Number(String(epoch)),
      walking: String(walking) === '1',
      since: Number(String(since)),
    };
  }

  /**
   * periodic-stage: commits claimed tasks' plans; answers the earliest nextrun and staged scores
   * afterwards, and per record whether it was committed (false: its claim was gone).
   */
  async stage(
    records: readonly StageRecord[],
  ): Promise<{ earliest: number | null; staged: number | null; committed: boolean[] }> {
    const [first, staged, results] = await this.queue.scripts.fcall<[string, string, number[]]>(
      'periodic-stage',
      this.keys.nextrun,
      [this.keys.prefix, this.queue.maxEvents, ...records.map((r) => encodeRecord(STAGE_FIELDS.map((f) => r[f])))],
    );
    return { earliest: scoreOf(first), staged: scoreOf(staged), committed: results.map((r) => r === 1) };
  }

  /**
   * periodic-release: submits up to `max` staged occurrences that are due (at `now`, default the
   * server clock) through their overlap policies; answers the earliest staged score left, the
   * jobs submitted, the occurrences skipped, the jobs to cancel (cancel-previous), and the
   * occurrences per job task and outcome. A released
   * event-rule run's history is kept `keepAgeMs` after its task goes (-1: forever).
   */
  async release(o: { now?: number; max: number; bufferPollMs: number; misfireGraceMs: number; keepAgeMs: number }): Promise<{
    earliest: number | null;
    submitted: number;
    skipped: number;
    cancels: string[];
    /** Per job task and outcome code ('s' submitted, 'k' skipped, 'm' missed), the occurrences. */
    outcomes: Array<{ task: string; code: string; count: number }>;
  }> {
    const [earliest, submitted, skipped, cancels, flat] = await this.queue.scripts.fcall<
      [string, number, number, string[], Array<string | number>]
    >('periodic-release', this.keys.staged, [
      this.keys.prefix,
      this.queue.maxEvents,
      o.now ?? '',
      o.max,
      o.bufferPollMs,
      o.misfireGraceMs,
      o.keepAgeMs,
    ]);
    const outcomes: Array<{ task: string; code: string; count: number }> = [];
    for (let i = 0; i + 2 < flat.length; i += 3)
      outcomes.push({ task: String(flat[i]), code: String(flat[i + 1]), count: Number(flat[i + 2]) });
    return { earliest: scoreOf(earliest), submitted: Number(submitted), skipped: Number(skipped), cancels, outcomes };
  }
}

/** A sorted-set score from a script reply ('' or null: none). */
function scoreOf(v: Buffer | string | number | null): number | null {
  if (v === null || v === undefined) return null;
  const s = String(v);
  return s === '' ? null : Number(s);
}

/**
 * A record of the stage script: a MessagePack array of raw strings, in the formats Redis's
 * cmsgpack reads (fixstr, str16, str32; it knows neither bin nor str8).
 */
export function encodeRecord(values: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from([0xdc, values.length >> 8, values.length & 0xff])];
  for (const v of values) {
    const b = typeof v === 'string' ? Buffer.from(v) : v;
    if (b.length < 32) parts.push(Buffer.from([0xa0 | b.length]));
    else if (b.length < 0x10000) parts.push(Buffer.from([0xda, b.length >> 8, b.length & 0xff]));
    else {
      const h = Buffer.alloc(5);
      h[0] = 0xdb;
      h.writeUInt32BE(b.length, 1);
      parts.push(h);
    }
    parts.push(b);
  }
  return Buffer.concat(parts);
}
