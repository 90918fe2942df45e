/**
 * Key names of a queue shard, built in one place. Every key of a shard shares its hash tag
 * (`{rota:<queue>}` for an unsharded queue, `{rota:<queue>:<i>}` for shard i: ./shards.ts), so a
 * shard lives in one Redis Cluster slot. The Lua scripts build the same names with the builders
 * generated from these (`KEY.job(prefix, id)`, {@link expandKeyBuilders}; key layout:
 * docs/format.md).
 */
import { ScriptLoadError, ValidationError } from '../errors.js';
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
  /** STRING `1` once an end from another queue was delivered to a parent here (lua/includes/jobKeys.lua); never removed. */
  crossParents: string;
  /** STRING set for a lease after a forward jump of the server's clock (lua/includes/clock.lua): no lease expires meanwhile. */
  clockJump: string;
  /** SET of the groups that have a concurrency limit. */
  limited: string;
  /** HASH of counts that only grow, for the metrics (lua/includes/tally.lua). */
  tally: string;
  /** LIST, during a reshard only: the jobs taken out of this shard and not yet forgotten (lua/includes/reshard.lua). */
  moving: string;
  /** SET, during a reshard only: the group lists (`<h|l|r><group>`) whose staying jobs are set aside. */
  reshardKept: string;
  /** LIST, during a reshard only: the staying jobs set aside from list `list` of group `group`. */
  keptAside(list: GroupList, group: string): string;
  /**
   * STRING of a dedup key (lua/includes/dedup.lua): `groupBytes` is the byte length of `group`,
   * so that no group and key pair names another's.
   */
  dedup(groupBytes: number, group: string, key: string): string;
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
  /** HASH of batch `id`: its counts, times and callbacks (BATCH in ./wire.ts; lua/includes/batches). */
  batch(id: string): string;
  /** LIST of the ids of batch `id`'s jobs, in the order they were added. */
  batchJobs(id: string): string;
  /** ZSET of the batches not completed yet -> when they were opened (ms): a reshard refuses while one is there. */
  batches: string;
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
    limited: `${prefix}limited`,
    tally: `${prefix}tally`,
    moving: `${prefix}moving`,
    reshardKept: `${prefix}reshard:kept`,
    keptAside: (list, g) => `${prefix}rk:${list}:${g}`,
    dedup: (bytes, g, key) => `${prefix}dd:${bytes}:${g}${key}`,
    crossSubmits: `${prefix}xsub`,
    crossIn: `${prefix}xin`,
    crossEnds: `${prefix}xend`,
    crossDelivered: (id) => `${prefix}xd:${id}`,
    crossParents: `${prefix}xp`,
    job: (id) => `${prefix}j:${id}`,
    fanStaging: (id, token) => `${prefix}fan:${token}:${id}`,
    fanned: (id) => `${prefix}fanned:${id}`,
    logs: (id) => `${prefix}log:${id}`,
    batch: (id) => `${prefix}bt:${id}`,
    batchJobs: (id) => `${prefix}btj:${id}`,
    batches: `${prefix}batches`,
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
 * docs/format.md ("Periodic keys"). The queue's schema version (`meta`) covers these keys
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
  /** HASH: `at` and `since` of the releases (lua/periodic-release.lua). */
  live: string;
  /** HASH: the periodic clock's `epoch` and `shift` (lua/includes/periodicClock.lua). */
  clock: string;
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
    live: `${prefix}p:live`,
    clock: `${prefix}p:clock`,
  };
}

// ---------------------------------------------------------------------------------------------
// The same builders in Lua
// ---------------------------------------------------------------------------------------------

/**
 * A key builder as the Lua scripts have it: `KEY.<name>(prefix, ...)`, building the same name as
 * the builder of ./keys.ts it is generated from. `parts` are the name's parts past the prefix: a
 * string is literal text, a number the builder's argument of that position (from 0, in the order
 * of the TypeScript builder's parameters).
 */
export interface LuaKeyBuilder {
  name: string;
  /** The builder's parameters besides the prefix (as many as the TypeScript builder's). */
  params: string[];
  parts: Array<string | number>;
}

/**
 * Parameter names for a builder of `n` arguments: `a1`, `a2`... (not the TypeScript names, which a
 * bundler may change: the library's code, and so its name, must not depend on the build).
 */
const paramNames = (n: number) => Array.from({ length: n }, (_, i) => `a${i + 1}`);

/** Stands for argument i of a key builder in the names it builds (none occurs in a key part). */
const argMark = (i: number) => String.fromCharCode(1 + i);
/** The argument a character of a built name stands for, or -1 for literal text. */
const argOf = (ch: string) => (ch.charCodeAt(0) >= 1 && ch.charCodeAt(0) <= 8 ? ch.charCodeAt(0) - 1 : -1);

/**
 * The Lua builders, generated from {@link queueKeys} and {@link periodicKeys}: one per key, under
 * its name in QueueKeys, and for a periodic key under `p` and its name (`pTask`, `pStaged`). A
 * builder's arguments are the TypeScript builder's, in order (`KEY.fanStaging(prefix, id, token)`).
 */
export function luaKeyBuilders(): LuaKeyBuilder[] {
  const out: LuaKeyBuilder[] = [];
  const add = (keys: object, named: (field: string) => string) => {
    const { prefix } = keys as { prefix: string };
    for (const [field, value] of Object.entries(keys)) {
      // (`group` is the head of a group's keys, not a key: Lua builds the keys, groupList and rateLog)
      if (field === 'prefix' || field === 'shard' || field === 'group') continue;
      let built: string;
      let params: string[] = [];
      if (typeof value === 'string') built = value;
      else if (typeof value === 'function') {
        params = paramNames(value.length);
        built = (value as (...a: string[]) => string)(...params.map((_, i) => argMark(i)));
      } else throw new ScriptLoadError(`key ${field} is neither a name nor a builder`);
      if (!built.startsWith(prefix)) throw new ScriptLoadError(`key ${field} does not start with its queue's prefix`);
      const parts: Array<string | number> = [];
      let text = '';
      for (const ch of built.slice(prefix.length)) {
        const arg = argOf(ch);
        if (arg < 0) text += ch;
        else {
          if (text) parts.push(text);
          parts.push(arg);
          text = '';
        }
      }
      if (text) parts.push(text);
      out.push({ name: named(field), params, parts });
    }
  };
  add(queueKeys('q'), (f) => f);
  add(periodicKeys('q'), (f) => `p${f[0].toUpperCase()}${f.slice(1)}`);
  const names = new Set<string>();
  for (const b of out) {
    if (names.has(b.name)) throw new ScriptLoadError(`two keys are named ${b.name} in Lua`);
    names.add(b.name);
  }
  return out;
}

/** A Lua string literal of `s`. */
const luaString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** An argument that goes into a concatenation as it is: a name, an index, a call, a literal, `#x`. */
const PLAIN_ARG = /^#?(?:[A-Za-z_][\w.]*(?:\[[^\]]*\]|\((?:[^()]|\([^()]*\))*\))*|'[^'\\]*'|"[^"\\]*"|\d+)$/;

/** The index after the bracket or quote opened at `i` of `s` (-1 when it is not closed). */
function closing(s: string, i: number): number {
  const open = s[i];
  if (open === "'" || open === '"') {
    for (let j = i + 1; j < s.length; j++) {
      if (s[j] === '\\') j++;
      else if (s[j] === open) return j + 1;
    }
    return -1;
  }
  const close = open === '(' ? ')' : open === '[' ? ']' : '}';
  for (let j = i + 1; j < s.length; j++) {
    const c = s[j];
    if (c === close) return j + 1;
    if (c === '(' || c === '[' || c === '{' || c === "'" || c === '"') {
      const e = closing(s, j);
      if (e < 0) return -1;
      j = e - 1;
    }
  }
  return -1;
}

/** Where a line's `--` comment begins (outside strings), or its length. */
function commentAt(line: string): number {
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'" || c === '"') {
      const e = closing(line, i);
      if (e < 0) return line.length;
      i = e - 1;
    } else if (c === '-' && line[i + 1] === '-') return i;
  }
  return line.length;
}

const BUILDER_CALL = /\bKEY\.(\w+)\(/g;

/** A literal string argument without escapes: its text. */
const LITERAL_ARG = /^'([^'\\]*)'$|^"([^"\\]*)"$/;
/** An argument `c and 'x' or 'y'` (literal branches without escapes). */
const CHOICE_ARG = /^(.+) and '([^'\\]*)' or '([^'\\]*)'$/;

/**
 * The concatenation builder `b` stands for, given its arguments' Lua text (the prefix first),
 * with literal text folded together as the scripts wrote it by hand: a literal argument joins
 * the text beside it (`KEY.done(prefix, 'failed')`: `prefix .. 'done:failed'`), and the text
 * before a choice goes into its branches (`KEY.groupList(prefix, g, high and 'h' or 'l')`:
 * `prefix .. 'g:' .. g .. (high and ':h' or ':l')`), so the bytecode is what it was.
 */
function keyName(b: LuaKeyBuilder, args: string[]): string {
  const pieces: Array<{ lit: string } | { expr: string }> = [{ expr: args[0] }];
  for (const p of b.parts) {
    const last = pieces[pieces.length - 1];
    if (typeof p === 'string') {
      if ('lit' in last) last.lit += p;
      else pieces.push({ lit: p });
      continue;
    }
    const a = args[p + 1];
    const lit = LITERAL_ARG.exec(a);
    const choice = CHOICE_ARG.exec(a);
    if (lit) {
      const text = lit[1] ?? lit[2];
      if ('lit' in last) last.lit += text;
      else pieces.push({ lit: text });
    } else if (choice && 'lit' in last && !/ and | or /.test(choice[1])) {
      pieces.pop();
      pieces.push({ expr: `(${choice[1]} and ${luaString(last.lit + choice[2])} or ${luaString(last.lit + choice[3])})` });
    } else pieces.push({ expr: PLAIN_ARG.test(a) ? a : `(${a})` });
  }
  return pieces.map((x) => ('lit' in x ? luaString(x.lit) : x.expr)).join(' .. ');
}

/**
 * Lua text `text` (a script or include of `file`) with each call of a key builder
 * `KEY.<name>(prefix, ...)` replaced, where it stands, by the concatenation the builder stands
 * for: `KEY.job(prefix, id)` becomes `(prefix .. 'j:' .. id)`, as `queueKeys(queue).job(id)`
 * builds it (builders: {@link luaKeyBuilders}). So the scripts name every key through the one
 * definition of the layout and pay nothing for it: a Lua function call per key would cost the
 * hot paths some 2 % of their instructions. Each line keeps its place (lint reports map back);
 * comments are left as they are. An argument is evaluated where the name uses it (in
 * `fanStaging` the token before the id): the scripts pass none with side effects. Throws on a
 * builder that does not exist or a call with the wrong number of arguments.
 */
export function expandKeyBuilders(text: string, file: string): string {
  const builders = new Map(luaKeyBuilders().map((b) => [b.name, b]));
  let inBlock = false;
  return text
    .split('\n')
    .map((line, at) => {
      // (block comments: `--[[ ... ]]` on lines of their own, as the scripts' headers are)
      if (inBlock) {
        if (line.includes(']]')) inBlock = false;
        return line;
      }
      if (/^\s*--\[\[/.test(line)) {
        inBlock = !line.includes(']]');
        return line;
      }
      const end = commentAt(line);
      let code = line.slice(0, end);
      for (;;) {
        BUILDER_CALL.lastIndex = 0;
        const m = BUILDER_CALL.exec(code);
        if (!m) break;
        const where = `${file}.lua:${at + 1}`;
        const b = builders.get(m[1]);
        if (!b) throw new ScriptLoadError(`${where}: KEY.${m[1]} is no key builder (src/redis/keys.ts)`);
        const open = m.index + m[0].length - 1;
        const close = closing(code, open);
        if (close < 0) throw new ScriptLoadError(`${where}: KEY.${m[1]}( is not closed on its line`);
        const args: string[] = [];
        let from = open + 1;
        for (let i = from; i < close - 1; i++) {
          const c = code[i];
          if (c === '(' || c === '[' || c === '{' || c === "'" || c === '"') i = closing(code, i) - 1;
          else if (c === ',') {
            args.push(code.slice(from, i).trim());
            from = i + 1;
          }
        }
        args.push(code.slice(from, close - 1).trim());
        if (args.length !== b.params.length + 1 || args.some((a) => a === '')) {
          throw new ScriptLoadError(`${where}: KEY.${b.name} takes the prefix and ${b.params.length} argument(s)`);
        }
        code = `${code.slice(0, m.index)}(${keyName(b, args)})${code.slice(close)}`;
      }
      return code + line.slice(end);
    })
    .join('\n');
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
