/** A queue on a Redis Cluster: the function library reaches every primary, and a job runs through. */
import { execFileSync } from 'node:child_process';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { RedisServer } from '../helpers/redis-server.js';

let nodes: RedisServer[] = [];

beforeAll(async () => {
  nodes = await Promise.all([0, 1, 2].map(() => RedisServer.start({ cluster: true })));
  execFileSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!execFileSync('redis-cli', ['-p', String(nodes[0].port), 'cluster', 'info']).toString().includes('cluster_state:ok')) {
    if (Date.now() > deadline) throw new Error('the test cluster did not come up');
    await new Promise((r) => setTimeout(r, 50));
  }
}, 30_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.destroy()));
});

describe('on a Redis Cluster', () => {
  it('loads the function library into every primary and runs a job from submit to success', async () => {
    const cluster = new Cluster(nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
    const q = new Queue('clustered', { connection: cluster });
    const w = new Worker('clustered', { double: ({ args }) => (args as number) * 2 }, { connection: cluster });
    try {
      const done = new Promise<unknown>((resolve) => w.on('completed', (_job, result) => resolve(result)));
      await q.submit({ id: 'c1', task: 'double', args: 21 });
      expect(await done).toBe(42);
      for (const primary of cluster.nodes('master')) {
        expect(((await primary.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'rota_*')) as unknown[]).length).toBe(1);
      }
    } finally {
      await w.close();
      await q.close();
      cluster.disconnect();
    }
  });
});
