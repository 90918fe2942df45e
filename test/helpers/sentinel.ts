/**
 * A local Sentinel set-up for tests: a primary, its replicas (one unless asked) and three
 * sentinels (redis-server --sentinel), on free loopback ports, with a short down-after so
 * failovers take seconds.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, RedisServer } from './redis-server.js';
import { until as waitUntil } from './wait.js';

/** Log lines about roles and replication: Sentinel's events and the servers' sync steps. */
const TRAIL =
  /[+-](switch-master|promoted-slave|convert-to-slave|odown|sdown master|failover-abort|failover-end |fix-slave-config|elected-leader|selected-slave)|MASTER <-> REPLICA|REPLICAOF|MASTER MODE|Full resync|Partial resynchronization|Ready to accept/;

/** A log file's lines ([] when it is not there). */
function readLog(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch {
    return [];
  }
}

/** The name the sentinels monitor the primary under. */
export const MASTER_NAME = 'rota-test';

export interface LocalSentinels {
  /** The data servers: the first started as the primary, the others as its replicas. */
  servers: RedisServer[];
  /** The sentinels' addresses, as ioredis `sentinels`. */
  sentinels: Array<{ host: string; port: number }>;
  /** Port of the server the sentinels name as primary now (as sentinel `via` tells, the first by default). */
  primaryPort(via?: number): Promise<number>;
  /** The server the sentinels name as primary now (as sentinel `via` tells). */
  currentPrimary(via?: number): Promise<RedisServer>;
  /** Asks the sentinels for a failover (SENTINEL FAILOVER) and resolves once the other server is primary. */
  failover(timeoutMs?: number): Promise<number>;
  /**
   * Resolves with the new primary's port once the sentinels name a primary other than the one on
   * port `before` and it takes writes (after a kill -9 of the primary, say), as sentinel `via` tells.
   */
  promoted(before: number, timeoutMs?: number, via?: number): Promise<number>;
  /** Stops sentinel `i` (SIGSTOP): it keeps its connections but answers nothing until {@link resume}. */
  pause(i: number): void;
  /** Lets a paused sentinel go on (SIGCONT). */
  resume(i: number): void;
  /**
   * What the sentinels and servers logged about roles and replication (failovers, promotions,
   * syncs), in time order, each line prefixed with its source: a fault test's account of a failure.
   */
  trail(): string[];
  destroy(): Promise<void>;
}

async function ask<T>(port: number, fn: (c: Redis) => Promise<T>): Promise<T> {
  const c = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await c.connect();
    return await fn(c);
  } finally {
    c.disconnect();
  }
}

/** Polls `check` (a failed check counts as not yet: the servers are coming up) until it holds. */
const until = (what: string, check: () => Promise<boolean>, timeoutMs: number) =>
  waitUntil(what, () => check().catch(() => false), { timeoutMs, intervalMs: 100 });

/** Starts the primary, `replicas` replicas and three sentinels, and resolves once all see each other. */
export async function startSentinels(replicas = 1): Promise<LocalSentinels> {
  const primary = await RedisServer.start();
  const others = await Promise.all(
    Array.from({ length: replicas }, () => RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] })),
  );
  const dir = mkdtempSync(join(tmpdir(), 'rota-sentinel-'));
  const procs: ChildProcess[] = [];
  const ports: number[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = join(dir, `sentinel-${i}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `logfile ${join(dir, `sentinel-${i}.log`)}`,
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
        `sentinel failover-timeout ${MASTER_NAME} 10000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const proc = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore', detached: true });
    const reap = () => proc.kill('SIGKILL');
    process.once('exit', reap);
    proc.once('exit', () => process.off('exit', reap));
    procs.push(proc);
    ports.push(port);
  }
  for (const replica of others) {
    await until(
      'the replica in sync',
      () => ask(replica.port, async (c) => (await c.info('replication')).includes('master_link_status:up')),
      20_000,
    );
  }
  await until(
    'the sentinels see the replica and each other',
    async () => {
      for (const port of ports) {
        const ok = await ask(port, async (c) => {
          const seen = (await c.call('SENTINEL', 'REPLICAS', MASTER_NAME)) as unknown[];
          const sentinels = (await c.call('SENTINEL', 'SENTINELS', MASTER_NAME)) as unknown[];
          return seen.length === replicas && sentinels.length === 2;
        });
        if (!ok) return false;
      }
      return true;
    },
    30_000,
  );
  const primaryPort = (via = 0) =>
    ask(ports[via], async (c) => {
      const [, port] = (await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', MASTER_NAME)) as [string, string];
      return Number(port);
    });
  const promoted = async (before: number, timeoutMs = 30_000, via = 0) => {
    await until('the failover', async () => (await primaryPort(via)) !== before, timeoutMs);
    const after = await primaryPort(via);
    await until(
      'the new primary writable',
      () => ask(after, async (c) => (await c.info('replication')).includes('role:master')),
      timeoutMs,
    );
    return after;
  };
  const servers = [primary, ...others];
  return {
    servers,
    sentinels: ports.map((port) => ({ host: '127.0.0.1', port })),
    primaryPort,
    async currentPrimary(via = 0) {
      const port = await primaryPort(via);
      const server = servers.find((s) => s.port === port);
      if (!server) throw new Error(`the sentinels name an unknown primary (port ${port})`);
      return server;
    },
    async failover(timeoutMs = 30_000) {
      const before = await primaryPort();
      await ask(ports[0], (c) => c.call('SENTINEL', 'FAILOVER', MASTER_NAME));
      return promoted(before, timeoutMs);
    },
    promoted,
    pause: (i) => procs[i].kill('SIGSTOP'),
    resume: (i) => procs[i].kill('SIGCONT'),
    trail() {
      const logs = [
        ...ports.map((port, i) => ({ who: `sentinel ${port}`, file: join(dir, `sentinel-${i}.log`) })),
        ...servers.map((s) => ({ who: `redis ${s.port}`, file: join(s.dir, 'redis.log') })),
      ];
      // (a line: "pid:role DD Mon YYYY HH:MM:SS.mmm text")
      const lines = logs.flatMap(({ who, file }) =>
        readLog(file)
          .filter((l) => TRAIL.test(l))
          .map((l) => {
            const text = l.slice(l.indexOf(' ') + 1);
            return { at: Date.parse(text.slice(0, 24)), text: `${who}: ${text.slice(0, 160)}` };
          }),
      );
      return lines.sort((a, b) => a.at - b.at).map((l) => l.text);
    },
    async destroy() {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(servers.map((s) => s.destroy()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
