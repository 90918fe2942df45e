/**
 * The Redis commands of `rota bench` (src/bench/): the server's INFO (CPU, command statistics,
 * role, eviction policy), the PING round trip, and the removal of the bench's own keys by SCAN
 * and UNLINK. It never writes anything else: no FLUSHDB, no CONFIG SET. On a Redis Cluster it
 * speaks to each primary in turn.
 */
import { Cluster, type Redis } from 'ioredis';
import { parseInfo } from './info.js';
import { benchKeyPatterns } from './keys.js';
import { execChecked } from './pipeline.js';

/** Keys one SCAN step asks for, and the most keys one UNLINK pipeline carries. */
const SCAN_COUNT = 1000;

/** What the bench must know of a server before it writes anything. */
export interface ServerFacts {
  /** `redis_version` (or `valkey_version`), `unknown` when INFO hides it. */
  version: string;
  /** `master` or `slave` (INFO replication), `unknown` when hidden. */
  role: string;
  /** INFO memory's `maxmemory_policy`, `unknown` when hidden. */
  maxmemoryPolicy: string;
  /** INFO memory's `maxmemory` in bytes: 0 for no limit, undefined when hidden. */
  maxmemory?: number;
  /** INFO memory's `used_memory` in bytes, undefined when hidden. */
  usedMemory?: number;
}

/** The bench's access to one server, or to every primary of a Cluster. */
export class BenchStore {
  constructor(private readonly client: Redis | Cluster) {}

  /** A store per primary (one, itself, for a single server). */
  primaries(): BenchStore[] {
    return this.client instanceof Cluster ? this.client.nodes('master').map((n) => new BenchStore(n)) : [this];
  }

  /** Whether the client is a Cluster's. */
  get isCluster(): boolean {
    return this.client instanceof Cluster;
  }

  /** `host:port` of this store's node (for a Cluster, of its first primary). */
  get address(): string {
    const o = (this.primaries()[0].client as Redis).options;
    return `${o.host}:${o.port}`;
  }

  /**
   * The server's INFO text (`everything`, which holds the command statistics; a server that
   * refuses that section is asked for the default ones). On a Cluster, the first primary's.
   */
  async info(): Promise<string> {
    const node = this.primaries()[0].client as Redis;
    try {
      return (await node.info('everything')) as string;
    } catch {
      return (await node.info()) as string;
    }
  }

  /** Version, role and eviction policy, from INFO (so that a server that refuses CONFIG GET still answers). */
  async facts(): Promise<ServerFacts> {
    const info = parseInfo(await this.info());
    return {
      version: info.valkey_version ?? info.redis_version ?? 'unknown',
      role: info.role ?? 'unknown',
      maxmemoryPolicy: info.maxmemory_policy ?? 'unknown',
      maxmemory: bytesOf(info.maxmemory),
      usedMemory: bytesOf(info.used_memory),
    };
  }

  /** Median round trip of `n` PINGs, in ms. */
  async pingMs(n = 7): Promise<number> {
    const rtts: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await this.client.ping();
      rtts.push(performance.now() - t0);
    }
    rtts.sort((a, b) => a - b);
    return rtts[rtts.length >> 1];
  }

  /** How many keys of the bench's namespace `ns` exist (on every primary). */
  async countNamespace(ns: string): Promise<number> {
    let n = 0;
    for (const p of this.primaries()) {
      await p.scan(ns, (keys) => {
        n += keys.length;
      });
    }
    return n;
  }

  /**
   * Unlinks every key of the bench's namespace `ns` (see benchKeyPatterns), primary by primary;
   * resolves to the number removed. Keys are unlinked one a command (pipelined), since a
   * Cluster refuses a multi-key UNLINK across slots.
   */
  async deleteNamespace(ns: string): Promise<number> {
    let n = 0;
    for (const p of this.primaries()) {
      const node = p.client as Redis;
      await p.scan(ns, async (keys) => {
        const pipe = node.pipeline();
        for (const k of keys) pipe.unlink(k);
        await execChecked(pipe);
        n += keys.length;
      });
    }
    return n;
  }

  private async scan(ns: string, each: (keys: string[]) => unknown): Promise<void> {
    const node = this.client as Redis;
    for (const pattern of benchKeyPatterns(ns)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        if (keys.length) await each(keys);
      } while (cursor !== '0');
    }
  }
}

/** A byte count of INFO, or undefined when absent or not a number. */
function bytesOf(value: string | undefined): number | undefined {
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}
