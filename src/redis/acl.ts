/**
 * The Redis commands each kind of Rota client sends, and the ACL lines of docs/operations.md made
 * from them: one deploy user, which loads the function library, and one runtime user for every
 * other role. A test checks the lists against what the scripts (lua/) and the stores (this
 * folder) call, and the docs' lines against {@link aclLines}.
 */

/** A kind of Rota client. */
export type AclRole = 'deploy' | 'producer' | 'executor' | 'scheduler' | 'dashboard' | 'cli';

/**
 * What every client sends: PING (the CLI's reachability check), INFO (ioredis's ready check, the
 * recovery pass's uptime), TIME, the library check (FUNCTION LIST) and FCALL, and on a Cluster the
 * slot map (CLUSTER SLOTS, INFO), the slot of a shard's tag (CLUSTER KEYSLOT) and the name of
 * each node's connection (CLIENT SETNAME).
 */
const CONNECT = [
  'ping',
  'info',
  'time',
  'fcall',
  'function|list',
  'cluster|slots',
  'cluster|info',
  'cluster|keyslot',
  'client|setname',
];

/**
 * The commands the library's functions call (lua/): Redis checks a script's commands against its
 * caller's ACL, so every role that calls a function needs them all.
 */
const SCRIPTS = [
  'del',
  'exists',
  'expire',
  'get',
  'hdel',
  'hexists',
  'hget',
  'hgetall',
  'hincrby',
  'hmget',
  'hscan',
  'hset',
  'hsetnx',
  'lindex',
  'llen',
  'lpop',
  'lpos',
  'lpush',
  'lrange',
  'lrem',
  'ltrim',
  'persist',
  'pexpire',
  'publish',
  'rename',
  'rpop',
  'rpush',
  'sadd',
  'set',
  'sismember',
  'smembers',
  'srem',
  'sscan',
  'unlink',
  'xadd',
  'xrevrange',
  'zadd',
  'zcard',
  'zcount',
  'zmscore',
  'zpopmin',
  'zrange',
  'zrangebyscore',
  'zrem',
  'zremrangebyrank',
  'zremrangebyscore',
  'zrevrange',
  'zscan',
  'zscore',
];

/** The reads of the stores outside scripts (job, group, periodic and dashboard reads), and their pipelines. */
const READS = [
  'multi',
  'exec',
  'get',
  'mget',
  'exists',
  'hget',
  'hmget',
  'hgetall',
  'hexists',
  'smembers',
  'scard',
  'sscan',
  'lrange',
  'zcount',
  'zmscore',
  'zrange',
  'zrangebyscore',
  'zrevrange',
  'zrevrangebyscore',
  'xread',
  'xrevrange',
];

/** The commands each role sends. */
export const ROLE_COMMANDS: Readonly<Record<AclRole, readonly string[]>> = {
  // (`rota migrate`: INFO and PING its connection and ready check, FUNCTION LOAD the library; its
  // data steps read the shards' meta hashes and SCAN their job hashes, and call the steps' scripts)
  deploy: [...CONNECT, ...SCRIPTS, 'function|load', 'scan'],
  // (WAIT: `durability: 'replicated'`; side writes outside scripts: set, hset, rpush, ltrim, pexpire, zadd...)
  producer: [...CONNECT, ...SCRIPTS, ...READS, 'wait', 'incrby'],
  // (BZPOPMIN and SUBSCRIBE: the wake-ups; the side writes of log() and progress())
  executor: [...CONNECT, ...SCRIPTS, ...READS, 'wait', 'bzpopmin', 'subscribe', 'zrem', 'unlink'],
  scheduler: [...CONNECT, ...SCRIPTS, ...READS, 'wait', 'bzpopmin', 'subscribe'],
  // (the Redis page reads INFO and FUNCTION LIST; SLOWLOG is left out on purpose, see docs/operations.md)
  dashboard: [...CONNECT, ...SCRIPTS, ...READS, 'subscribe'],
  cli: [...CONNECT, ...SCRIPTS, ...READS, 'wait'],
};

/** The roles the runtime user serves. */
export const RUNTIME_ROLES: readonly AclRole[] = ['producer', 'executor', 'scheduler', 'dashboard', 'cli'];

/** The commands of `roles`, each once, in the order the lists give them. */
export function commandsOf(roles: readonly AclRole[]): string[] {
  return [...new Set(roles.flatMap((r) => ROLE_COMMANDS[r]))];
}

/**
 * The `ACL SETUSER` lines of docs/operations.md: the deploy user `rota-deploy` (keys under `{rota:`, no channels) and the
 * runtime user `rota` (keys and channels under `{rota:`), their passwords to be replaced.
 */
export function aclLines(): string[] {
  const plus = (cmds: string[]) => cmds.map((c) => `+${c}`).join(' ');
  return [
    `ACL SETUSER rota-deploy on >CHANGE-ME-DEPLOY resetkeys ~{rota:* resetchannels -@all ${plus(commandsOf(['deploy']))}`,
    `ACL SETUSER rota on >CHANGE-ME resetkeys ~{rota:* resetchannels &{rota:* -@all ${plus(commandsOf(RUNTIME_ROLES))}`,
  ];
}
