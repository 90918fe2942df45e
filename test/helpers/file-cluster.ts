/** A Redis Cluster of a test file's own (kept apart from ./cluster.ts, which the benchmarks use outside vitest). */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type LocalCluster, startCluster } from './cluster.js';

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
