/**
 * The ports Cluster nodes are given: a node's bus port is its port + 10,000, so a node above 55,535
 * cannot start ("Redis port number too high"), and one whose bus port is taken cannot either.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { CLUSTER_BUS_OFFSET, CLUSTER_PORTS, freeClusterPort, RedisServer } from '../helpers/redis-server.js';

/** Listens on `port` of 127.0.0.1 until closed. */
function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

describe('freeClusterPort', () => {
  it('gives ports whose bus port is a port below 65,536, outside the ephemeral range', async () => {
    for (let i = 0; i < 50; i += 1) {
      const port = await freeClusterPort();
      expect(port).toBeGreaterThanOrEqual(CLUSTER_PORTS.min);
      expect(port + CLUSTER_BUS_OFFSET).toBeLessThanOrEqual(32_767);
    }
    // (the edges of the range are reachable, and stay within it)
    expect(await freeClusterPort(() => 0)).toBe(CLUSTER_PORTS.min);
    expect(await freeClusterPort(() => 0.999_999_999)).toBe(CLUSTER_PORTS.max);
  });

  it('passes over a port whose bus port is taken, and over a port that is taken', async () => {
    const span = CLUSTER_PORTS.max - CLUSTER_PORTS.min + 1;
    const at = (port: number) => (port - CLUSTER_PORTS.min + 0.5) / span;
    const first = await freeClusterPort();
    const second = first === CLUSTER_PORTS.max ? first - 1 : first + 1;
    const third = await freeClusterPort();
    const bus = await occupy(first + CLUSTER_BUS_OFFSET);
    const taken = await occupy(second);
    try {
      const draws = [at(first), at(second), at(third)];
      expect(await freeClusterPort(() => draws.shift() ?? 0)).toBe(third);
    } finally {
      bus.close();
      taken.close();
    }
  });

  it("starts Cluster nodes whose ports and bus ports lie below the kernel's ephemeral range", async () => {
    // (an outgoing connection can take any port of that range, a bus port too, before the node binds it)
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    const nodes = await Promise.all(Array.from({ length: 10 }, () => RedisServer.start({ cluster: true })));
    try {
      for (const n of nodes) {
        expect(n.port + CLUSTER_BUS_OFFSET).toBeLessThan(low);
        expect(n.port + CLUSTER_BUS_OFFSET).toBeLessThanOrEqual(65_535);
        const c = new Redis(n.port, '127.0.0.1');
        try {
          expect(await c.call('CLUSTER', 'MYID')).toMatch(/^[0-9a-f]{40}$/);
        } finally {
          c.disconnect();
        }
      }
    } finally {
      await Promise.all(nodes.map((n) => n.destroy()));
    }
  });
});
