/**
 * Key names of the periodic scheduler, below the queue's prefix `{rota:<queue>}:` (so a queue and
 * its periodic tasks live in one Redis Cluster slot). The Lua scripts build the same names from
 * the prefix; see lua/includes/periodic.lua. The queue's schema version (`meta`, see
 * src/redis/keys.ts) covers these keys too: the periodic scripts write the queue's jobs.
 *
 *   p:t:<id>        HASH   a periodic task (fields: see {@link TASK_FIELDS})
 *   p:nextrun       ZSET   enabled task id -> when a scheduler must look at it next (ms): its next
 *                          occurrence, or the expiry of a replica's claim, or a buffer-one re-check
 *   p:all           SET    ids of every task defined through upsert (not event-rule runs)
 *   p:owner:<owner> SET    ids of the tasks of an owner
 *   p:h:<id>        ZSET   run history of a task: member -> occurrence (ms). Members are job ids
 *                          (`<id>@<occurrence>`) or `~skipped@<occ>` / `~missed@<first>@<count>@<last>`
 *   p:staged        ZSET   staged occurrences: <overlap code><job id> -> when to release them (ms)
 *   p:last          HASH   task id -> id of the last job submitted for it
 *   p:buf           HASH   task id -> id of the job buffer-one holds back
 *   p:wake          pub/sub channel: schedulers re-read the earliest nextrun when told
 *   p:replicas      ZSET   live scheduler replica id -> when its entry expires (ms, server clock)
 *   p:rule:<id>     HASH   an event rule (id, after, delay, delayMs, task, group, args, created)
 *   p:rules         SET    ids of every event rule
 *   p:ev:<event>    SET    ids of the rules that follow `event`
 */
import { queueKeys } from '../redis/keys.js';

export interface PeriodicKeys {
  prefix: string;
  nextrun: string;
  staged: string;
  last: string;
  buf: string;
  all: string;
  wake: string;
  replicas: string;
  rules: string;
  task(id: string): string;
  owner(owner: string): string;
  history(id: string): string;
  rule(id: string): string;
  event(name: string): string;
}

/** The periodic keys of queue `name`. */
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
  };
}
