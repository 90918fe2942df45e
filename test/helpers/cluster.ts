/** A local Redis Cluster for tests: real redis-server nodes on free ports, built with redis-cli. */
import { execFileSync } from 'node:child_process';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
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
  destroy(): Promise<void>;
}

/** The nodes' `cluster-node-timeout`: a primary unreachable this long is failing, and its replica takes over. */
export const NODE_TIMEOUT_MS = 1000;

/**
 * Starts `primaries` primaries with `replicas` replicas each. A short node timeout
 * ({@link NODE_TIMEOUT_MS}) makes a replica take over within seconds of its primary's death.
 */
export async function startCluster(primaries = 3, replicas = 0): Promise<LocalCluster> {
  const count = primaries * (1 + replicas);
  const nodes = await Promise.all(
    Array.from({ length: count }, () =>
      RedisServer.start({ cluster: true, args: ['--cluster-node-timeout', String(NODE_TIMEOUT_MS)] }),
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
 * A cluster of a test file's own: started before the file's tests ({@link startCluster}) and
 * destroyed after them, with the Cluster clients `connect()` opened meanwhile.
 */
export function fileCluster(primaries = 3, replicas = 0): { readonly cluster: LocalCluster; connect(): Cluster } {
  const clients: Cluster[] = [];
  const own = {
    cluster: undefined as unknown as LocalCluster,
    connect(): Cluster {
      const c = new Cluster(own.cluster.startupNodes);
      clients.push(c);
      return c;
    },
  };
  beforeAll(async () => {
    own.cluster = await startCluster(primaries, replicas);
  }, 60_000);
  afterAll(async () => {
    for (const c of clients.splice(0)) c.disconnect();
    await own.cluster?.destroy();
  });
  return own;
}
