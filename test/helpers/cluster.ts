/** A local Redis Cluster for tests: real redis-server nodes on free ports, built with redis-cli. */
import { execFileSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RedisServer } from './redis-server.js';

/** A running cluster: its nodes, in the order they were started. */
export interface LocalCluster {
  nodes: RedisServer[];
  /** The nodes as ioredis startup nodes. */
  startupNodes: Array<{ host: string; port: number }>;
  /** The node that is primary for `key`'s slot now. */
  primaryOf(key: string): Promise<RedisServer>;
  /** Resolves once every slot is served and the cluster says `ok` (after a failover too). */
  waitOk(timeoutMs?: number): Promise<void>;
  /** Moves `slot`, which must hold no key, to primary `to` (see {@link moveEmptySlot}). */
  moveSlot(slot: number, to: RedisServer): Promise<void>;
  destroy(): Promise<void>;
}

/** The nodes' `cluster-node-timeout`: a primary unreachable this long is failing, and its replica takes over. */
export const NODE_TIMEOUT_MS = 1000;

/**
 * Starts `primaries` primaries with `replicas` replicas each. A short node timeout
 * ({@link NODE_TIMEOUT_MS} by default) makes a replica take over within seconds of its primary's death.
 */
export async function startCluster(primaries = 3, replicas = 0, nodeTimeoutMs = NODE_TIMEOUT_MS): Promise<LocalCluster> {
  const count = primaries * (1 + replicas);
  const nodes = await Promise.all(
    Array.from({ length: count }, () =>
      RedisServer.start({ cluster: true, args: ['--cluster-node-timeout', String(nodeTimeoutMs)] }),
    ),
  );
  execFileSync(
    'redis-cli',
    ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
    { stdio: 'ignore' },
  );
  const ask = async <T>(fn: (c: Redis) => Promise<T>): Promise<T> => {
    for (const n of nodes) {
      if (!n.pid) continue;
      const c = new Redis(n.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        await c.connect();
        return await fn(c);
      } catch {
        // a dead node: ask the next one
      } finally {
        c.disconnect();
      }
    }
    throw new Error('no cluster node answers');
  };
  const cluster: LocalCluster = {
    nodes,
    startupNodes: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    async primaryOf(key) {
      const slot = await ask((c) => c.cluster('KEYSLOT', key));
      const slots = await ask((c) => c.cluster('SLOTS'));
      const owner = slots.find(([from, to]) => slot >= from && slot <= to);
      const node = nodes.find((n) => n.port === owner?.[2]?.[1]);
      if (!node) throw new Error(`no primary serves slot ${slot}`);
      return node;
    },
    async waitOk(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!(await everyLiveNode(nodes, isSettled))) {
        if (Date.now() > deadline) throw new Error(`the test cluster was not ok within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async moveSlot(slot, to) {
      await moveEmptySlot(
        nodes.filter((n) => n.pid).map((n) => ({ host: '127.0.0.1', port: n.port })),
        slot,
        { host: '127.0.0.1', port: to.port },
      );
    },
    async destroy() {
      await Promise.all(nodes.map((n) => n.destroy()));
    },
  };
  await cluster.waitOk();
  return cluster;
}

/** Whether `check` holds on every node that runs (a node that does not answer fails it). */
async function everyLiveNode(nodes: RedisServer[], check: (c: Redis) => Promise<boolean>): Promise<boolean> {
  const answers = await Promise.all(
    nodes
      .filter((n) => n.pid)
      .map(async (n) => {
        const c = new Redis(n.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        try {
          await c.connect();
          return await check(c);
        } catch {
          return false;
        } finally {
          c.disconnect();
        }
      }),
  );
  return answers.every(Boolean);
}

/** The node sees the cluster `ok`, and as a replica it is in sync with its primary. */
async function isSettled(c: Redis): Promise<boolean> {
  if (!(await c.cluster('INFO')).includes('cluster_state:ok')) return false;
  const replication = await c.info('replication');
  return !replication.includes('role:slave') || replication.includes('master_link_status:up');
}

/**
 * Moves `slot`, which must hold no key, to primary `to`, by the steps of a slot migration with no
 * key to migrate: IMPORTING on `to`, MIGRATING on the owner, then `SETSLOT <slot> NODE <to>` on
 * `to`, on the owner and on every other primary of `nodes` (all the cluster's nodes). `to` goes
 * first and takes a new config epoch, above every other node's, so that its claim wins over the
 * owner's older gossip. It can only do so if it knows the cluster's current epoch: after a move
 * to another node a moment before, it may not yet, and then the owner's last claim (sent before it
 * let go of the slot) takes the slot back on `to` while the owner already thinks `to` has it, and
 * nobody serves the slot. So a move first waits until every primary reports the same current
 * epoch, and afterwards until every primary sees `to` serve the slot.
 */
export async function moveEmptySlot(
  nodes: Array<{ host: string; port: number }>,
  slot: number,
  to: { host: string; port: number },
): Promise<void> {
  const clients = nodes.map((n) => ({ ...n, c: new Redis(n.port, n.host, { maxRetriesPerRequest: 0 }) }));
  try {
    // (replicas refuse SETSLOT and learn the move from their primaries)
    const roles = await Promise.all(clients.map((n) => n.c.call('ROLE') as Promise<[string]>));
    const primaries = clients.filter((_, i) => roles[i][0] === 'master');
    const ids = await Promise.all(primaries.map((n) => n.c.cluster('MYID') as Promise<string>));
    const target = primaries.findIndex((n) => n.port === to.port && n.host === to.host);
    if (target < 0) throw new Error(`${to.host}:${to.port} is not a primary among the nodes`);
    const ownerSeenBy = async (n: (typeof clients)[number]) => {
      const range = (await n.c.cluster('SLOTS')).find(([from, last]) => slot >= from && slot <= last);
      return primaries.findIndex((p) => p.port === range?.[2]?.[1]);
    };
    const epochsAgree = async () => {
      const infos = await Promise.all(primaries.map((n) => n.c.cluster('INFO') as Promise<string>));
      return new Set(infos.map((i) => /cluster_current_epoch:(\d+)/.exec(i)?.[1])).size === 1;
    };
    await settle(epochsAgree, `the primaries did not agree on the current epoch before moving slot ${slot}`);
    const owner = await ownerSeenBy(primaries[target]);
    if (owner < 0) throw new Error(`no primary of the list serves slot ${slot}`);
    if (owner === target) return;
    const keys = (await primaries[owner].c.cluster('COUNTKEYSINSLOT', slot)) as number;
    if (keys > 0) throw new Error(`slot ${slot} holds ${keys} keys; only an empty slot is moved here`);
    await primaries[target].c.cluster('SETSLOT', slot, 'IMPORTING', ids[owner]);
    await primaries[owner].c.cluster('SETSLOT', slot, 'MIGRATING', ids[target]);
    const others = [...primaries.keys()].filter((i) => i !== target && i !== owner);
    for (const i of [target, owner, ...others]) await primaries[i].c.cluster('SETSLOT', slot, 'NODE', ids[target]);
    await settle(
      async () => (await Promise.all(primaries.map(ownerSeenBy))).every((o) => o === target) && (await epochsAgree()),
      `the primaries did not all see slot ${slot} on ${to.host}:${to.port} after the move`,
    );
  } finally {
    for (const n of clients) n.c.disconnect();
  }
}

/** Resolves once `check` holds (polled every 20 ms); throws `message` after 10 s. */
async function settle(check: () => Promise<boolean>, message: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(message);
    await new Promise((r) => setTimeout(r, 20));
  }
}
