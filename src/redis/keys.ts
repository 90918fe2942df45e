/**
 * Key names of a queue shard, built in one place. Every key of a shard shares its hash tag
 * (`{rota:<queue>}` for an unsharded queue, `{rota:<queue>:<i>}` for shard i: ./shards.ts), so a
 * shard lives in one Redis Cluster slot. Lua scripts build the per-group and per-job keys from the
 * same prefix (key layout: docs/architecture.md).
 */
import { ValidationError } from '../errors.js';
import { shardTag } from './shards.js';
import { CANCEL_MARK, RUNNING_MARK, SCHEDULED_MARK } from './wire.js';

const QUEUE_NAME = /^[A-Za-z0-9._-]{1,100}$/;

/** Checks a queue name: 1–100 characters among letters, digits, `.`, `_` and `-`. */
export function checkQueueName(name: string): void {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) {
    throw new ValidationError('queue', `"${String(name)}" is not a valid queue name (1-100 of A-Z a-z 0-9 . _ -)`);
  }
}

/** A group's job lists: high priority, low priority, preferred (due stuck and released jobs). */
export const GROUP_LISTS = ['h', 'l', 'r'] as const;

/** One of {@link GROUP_LISTS}. */
export type GroupList = (typeof GROUP_LISTS)[number];

export interface QueueKeys {
  prefix: string;
  /** The shard these keys are of (0 for an unsharded queue). */
  shard: number;
  /** HASH of the queue's own facts: `schema`, the data format's version (see SCHEMA_VERSION in ./wire.ts). */
  meta: string;
  rotation: string;
  marker: string;
  delayed: string;
  /** The runs in progress: ZSET of lease token + mark + job id -> lease expiry (see leaseJobId). */
  leases: string;
  counts: string;
  groups: string;
  events: string;
  workers: string;
  cancel: string;
  seq: string;
  /** ZSET of the jobs in state `waiting-children` -> their submit time (lua/includes/waitIndex.lua). */
  waitingChildren: string;
  /** ZSET of fan-out parents whose committed children are not all submitted yet -> commit time. */
  fanouts: string;
  /** LIST: outbox of a flow's children to submit in other queues (lua/fanout.lua adds, ../queue/cross.ts relays). */
  crossSubmits: string;
  /** ZSET: the child ids received from other queues' outboxes (lua/xsub-in.lua) -> receive time; kept a day. */
  crossIn: string;
  /** ZSET: outbox of the ends of children whose parents are in other queues (lua/includes/children) -> push time. */
  crossEnds: string;
  /** HASH of parent `id`: child id -> "<seq> <count field>", the last end delivered from another queue (lua/xend-in.lua). */
  crossDelivered(id: string): string;
  /** STRING set for a lease after a forward jump of the server's clock (lua/includes/clock.lua): no lease expires meanwhile. */
  clockJump: string;
  job(id: string): string;
  /**
   * LIST staging the children a run of job `id` with lease `token` fanned out (ctx.fanOut), until
   * its finish commits them. Outside `j:`, so that no job id can name it (ids are any text).
   */
  fanStaging(id: string, token: string | number): string;
  /** LIST of the committed children of fan-out parent `id` not submitted yet. */
  fanned(id: string): string;
  /** LIST of job `id`'s log lines. Outside `j:`, so that no job id (any text) can name it. */
  logs(id: string): string;
  /** LIST of job `id`'s earlier attempts, newest first (lua/includes/attempts). Outside `j:` too. */
  attempts(id: string): string;
  group(name: string): string;
  done(state: 'success' | 'failed' | 'cancelled'): string;
  worker(id: string): string;
  /** LIST of group `name`'s waiting jobs of one kind (see {@link GroupList}); the scripts build the same names. */
  groupList(name: string, list: GroupList): string;
  /** ZSET of the starts of group `name` counted by its rate limit (its rate log). */
  rateLog(name: string): string;
  /** HASH of the runs that ended in minute `minute` (since the epoch), per task (./history.ts); expires after 25 h. */
  historyMinute(minute: number): string;
  /** HASH of the runs that ended in day `day` (since the epoch, UTC), per task; expires after 91 days. */
  historyDay(day: number): string;
  /** HASH of the runs that ended in minute `minute`, per group (the fairness view); expires after 2 h. */
  historyGroups(minute: number): string;
}

const LEASE_MEMBER = new RegExp(`^\\d+[${SCHEDULED_MARK}${RUNNING_MARK}\\${CANCEL_MARK}]([\\s\\S]*)$`);

/**
 * The job id of a member of `leases`: the lease token (digits), a one-character mark of the run's
 * condition (`:` scheduled, `!` running, `?` cancel requested), then the id. Null for the set's
 * pad member, which is no run's.
 */
export function leaseJobId(member: string): string | null {
  return LEASE_MEMBER.exec(member)?.[1] ?? null;
}

/** The keys of shard `shard` of queue `name` with `shards` shards (default: the unsharded queue's). */
export function queueKeys(name: string, shard = 0, shards = 1): QueueKeys {
  checkQueueName(name);
  const prefix = `${shardTag(name, shard, shards)}:`;
  return {
    prefix,
    shard,
    meta: `${prefix}meta`,
    rotation: `${prefix}rotation`,
    marker: `${prefix}marker`,
    delayed: `${prefix}delayed`,
    leases: `${prefix}leases`,
    counts: `${prefix}counts`,
    groups: `${prefix}groups`,
    events: `${prefix}events`,
    workers: `${prefix}workers`,
    cancel: `${prefix}cancel`,
    seq: `${prefix}seq`,
    fanouts: `${prefix}fanouts`,
    waitingChildren: `${prefix}waiting-children`,
    clockJump: `${prefix}clock-jump`,
    crossSubmits: `${prefix}xsub`,
    crossIn: `${prefix}xin`,
    crossEnds: `${prefix}xend`,
    crossDelivered: (id) => `${prefix}xd:${id}`,
    job: (id) => `${prefix}j:${id}`,
    fanStaging: (id, token) => `${prefix}fan:${token}:${id}`,
    fanned: (id) => `${prefix}fanned:${id}`,
    logs: (id) => `${prefix}log:${id}`,
    attempts: (id) => `${prefix}att:${id}`,
    group: (g) => `${prefix}g:${g}`, // prefix of the group's lists :h, :l, :r
    done: (state) => `${prefix}done:${state}`,
    worker: (id) => `${prefix}w:${id}`,
    groupList: (g, list) => `${prefix}g:${g}:${list}`,
    rateLog: (g) => `${prefix}g:${g}:rl`,
    historyMinute: (m) => `${prefix}hist:m:${m}`,
    historyDay: (d) => `${prefix}hist:d:${d}`,
    historyGroups: (m) => `${prefix}hist:g:${m}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Periodic keys
// ---------------------------------------------------------------------------------------------

/**
 * Key names of the periodic scheduler, below the queue's home-shard prefix `{rota:<queue>}:` (so
 * a queue's tasks, rules and their runs live in one Redis Cluster slot). The Lua scripts build the
 * same names from the prefix (see lua/includes/periodic.lua); the table of what each holds is in
 * docs/architecture.md ("Periodic tasks"). The queue's schema version (`meta`) covers these keys
 * too: the periodic scripts write the queue's jobs.
 */
export interface PeriodicKeys {
  prefix: string;
  /** ZSET: enabled task id -> when a scheduler must look at it next (ms). */
  nextrun: string;
  /** ZSET: staged occurrences -> when to release them (ms). */
  staged: string;
  /** HASH: task id -> id of the last job submitted for it. */
  last: string;
  /** HASH: task id -> the `staged` member of the run buffer-one holds back. */
  buf: string;
  /** SET: ids of every task defined through upsert (not event-rule runs). */
  all: string;
  /** Pub/sub channel the scheduler replicas listen on. */
  wake: string;
  /** ZSET: live scheduler replica id -> when its entry expires (ms, server clock). */
  replicas: string;
  /** STRING: a scheduler replica's record (JSON: host, pid, started, claims, lateness...), with the entry's TTL. */
  replica(id: string): string;
  /** SET: ids of every event rule. */
  rules: string;
  /** HASH: a periodic task. */
  task(id: string): string;
  /** SET: ids of an owner's tasks. */
  owner(owner: string): string;
  /** ZSET: a task's run history. */
  history(id: string): string;
  /** HASH: an event rule. */
  rule(id: string): string;
  /** HASH: a task's backfill ledger: occurrence (ms) -> how many times a backfill submitted it. */
  backfilled(id: string): string;
  /** ZSET: a task's buffer-all backlog: `p:staged` member -> occurrence (ms). */
  backlog(id: string): string;
  /** SET: ids of the rules that follow event `name`. */
  event(name: string): string;
}

/** The periodic keys of queue `name` (in its home shard, whatever its shard count). */
export function periodicKeys(name: string): PeriodicKeys {
  const { prefix } = queueKeys(name);
  return {
    prefix,
    nextrun: `${prefix}p:nextrun`,
    staged: `${prefix}p:staged`,
    last: `${prefix}p:last`,
    buf: `${prefix}p:buf`,
    all: `${prefix}p:all`,
    wake: `${prefix}p:wake`,
    replicas: `${prefix}p:replicas`,
    rules: `${prefix}p:rules`,
    task: (id) => `${prefix}p:t:${id}`,
    owner: (o) => `${prefix}p:owner:${o}`,
    history: (id) => `${prefix}p:h:${id}`,
    rule: (id) => `${prefix}p:rule:${id}`,
    event: (e) => `${prefix}p:ev:${e}`,
    backfilled: (id) => `${prefix}p:bf:${id}`,
    backlog: (id) => `${prefix}p:bq:${id}`,
    replica: (id) => `${prefix}p:rep:${id}`,
  };
}

/**
 * SCAN patterns that match every key of the queues `rota bench` makes in its namespace `ns`
 * (queue names that begin with `ns`): Rota's own (`{rota:<queue>}` and each shard's
 * `{rota:<queue>:<i>}`), and those of the peers it compares with (BullMQ's `bull:<queue>:`,
 * GroupMQ's `groupmq:<namespace>:`).
 */
export function benchKeyPatterns(ns: string): string[] {
  checkQueueName(ns);
  return [`{rota:${ns}*`, `bull:${ns}*`, `groupmq:${ns}*`];
}
