/**
 * What the dependency fault tests (flows, cross-queue flows, batches) share: a fleet of executor
 * processes killed with kill -9 at random moments and replaced, the events of every shard of a
 * queue in stream order, and a flow tree's waiters.
 */
import type { Redis } from 'ioredis';
import type { FlowNode, Queue, QueueEvent } from '../../src/index.js';
import { parseEntry } from '../../src/queue/events.js';
import { queueKeys } from '../../src/redis/keys.js';
import { shardNumbers } from '../../src/redis/shards.js';
import { NodeProcess } from './processes.js';
import { sleep } from './wait.js';

/** A fault test's queue: its name and shard count, how executors reach Redis, a raw client and a handle. */
export interface FaultQueue {
  name: string;
  shards: number;
  /** The executors' connection: REDIS_URL or CLUSTER_NODES (`host:port,...`). */
  env: NodeJS.ProcessEnv;
  /** A plain client (a Cluster one on a cluster) for reading the queue's keys. */
  client: Redis;
  q: Queue;
}

/** The environment of an executor of `s` running `concurrency` jobs at once, with a 1 s lease. */
export function executorEnv(s: FaultQueue, concurrency: number): NodeJS.ProcessEnv {
  return { ...s.env, QUEUE: s.name, SHARDS: String(s.shards), LEASE_MS: '1000', CONCURRENCY: String(concurrency) };
}

/** How a fleet's kill loop strikes. */
export interface KillLoop {
  /** Kills at most. */
  times: number;
  /** The pause before each kill: uniformly in [min, max) ms. */
  pauseMs: readonly [number, number];
  /**
   * `await`: wait until the replacement is ready before the next pause (each kill strikes a
   * running executor); `any`: start it and go on, the next kill may strike one that is still
   * starting; `ready`: start it and go on, the next kill strikes only an executor that is ready.
   */
  replace: 'await' | 'any' | 'ready';
}

/** A running kill loop: its kills so far, and its end. */
export interface Killing {
  readonly kills: number;
  /** Ends the loop (after the kill in progress, if any) and answers how many it made. */
  stop(): Promise<number>;
}

/** Executor processes, one per environment, each started again after its kill with the same one. */
export class ExecutorFleet {
  private readonly procs: NodeProcess[];
  private readonly ready: boolean[];

  /**
   * Starts `script` once per entry of `envs` and waits until each says `{ type: 'ready' }`.
   * `track` receives every process started (the replacements too) so that a test's clean-up
   * kills them.
   */
  static async start(
    script: string,
    envs: readonly NodeJS.ProcessEnv[],
    track: (p: NodeProcess) => void,
  ): Promise<ExecutorFleet> {
    const fleet = new ExecutorFleet(script, envs, track);
    await Promise.all(fleet.procs.map((p) => ExecutorFleet.whenReady(p)));
    fleet.ready.fill(true);
    return fleet;
  }

  private constructor(
    private readonly script: string,
    private readonly envs: readonly NodeJS.ProcessEnv[],
    private readonly track: (p: NodeProcess) => void,
  ) {
    this.procs = envs.map((_, i) => this.spawn(i));
    this.ready = envs.map(() => false);
  }

  private static whenReady(p: NodeProcess): Promise<unknown> {
    return p.waitFor((m) => m.type === 'ready', 60_000);
  }

  private spawn(i: number): NodeProcess {
    const p = new NodeProcess(this.script, [], this.envs[i]);
    this.track(p);
    return p;
  }

  /** Starts killing one executor at a time with kill -9, as `loop` says, and replacing it. */
  killRepeatedly(loop: KillLoop): Killing {
    let kills = 0;
    let done = false;
    const [min, max] = loop.pauseMs;
    const run = (async () => {
      while (!done && kills < loop.times) {
        await sleep(min + Math.floor(Math.random() * (max - min)));
        if (done) break;
        const up = loop.replace === 'ready' ? this.ready.flatMap((r, i) => (r ? [i] : [])) : this.procs.map((_, i) => i);
        if (up.length === 0) continue;
        const i = up[Math.floor(Math.random() * up.length)];
        await this.procs[i].kill();
        kills++;
        this.ready[i] = false;
        const next = this.spawn(i);
        this.procs[i] = next;
        const ready = ExecutorFleet.whenReady(next).then(() => {
          if (this.procs[i] === next) this.ready[i] = true;
        });
        if (loop.replace === 'await') await ready;
        else ready.catch(() => undefined);
      }
    })();
    return {
      get kills() {
        return kills;
      },
      async stop() {
        done = true;
        await run;
        return kills;
      },
    };
  }
}

/**
 * The events of shards `which` (default: every shard) of queue `queue` of `shards` shards, each
 * shard's in its order.
 */
export async function shardEvents(
  client: Redis,
  queue: string,
  shards = 1,
  which: readonly number[] = shardNumbers(shards),
): Promise<QueueEvent[]> {
  const out: QueueEvent[] = [];
  for (const shard of which) {
    const key = queueKeys(queue, shard, shards).events;
    const entries = (await client.xrange(key, '-', '+')) as Array<[string, string[]]>;
    out.push(...entries.flatMap(([sid, f]) => parseEntry(sid, f)));
  }
  return out;
}

function streamOrder(e: QueueEvent): [number, number] {
  const [ms, seq] = e.streamId.split('-').map(Number);
  return [ms, seq];
}

/** Whether event `a` came strictly before event `b` in their stream (both of one stream). */
export function streamBefore(a: QueueEvent, b: QueueEvent): boolean {
  const [x, y] = [streamOrder(a), streamOrder(b)];
  return x[0] < y[0] || (x[0] === y[0] && x[1] < y[1]);
}

/** The ids of a flow tree, root first, and each waiter's (a node with children) child ids. */
export function flowTree(root: FlowNode): { ids: string[]; waiters: Map<string, string[]> } {
  const ids: string[] = [];
  const waiters = new Map<string, string[]>();
  const walk = (n: FlowNode) => {
    ids.push(n.id);
    if (n.children) {
      waiters.set(
        n.id,
        n.children.map((c) => c.id),
      );
      n.children.forEach(walk);
    }
  };
  walk(root);
  return { ids, waiters };
}
