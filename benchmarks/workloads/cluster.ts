/**
 * Cluster (Rota only: BullMQ and GroupMQ cannot spread one queue over a cluster): one queue of
 * `shards` shards on a Redis Cluster of three primaries, with the shards' slots placed evenly over
 * the primaries first (shard i on primary i mod 3, the home shard on the next one in turn). Then:
 * - the drain of drain-c100 (N no-op jobs over 1,000 groups, filled in bulk, one executor at
 *   concurrency 100), with each primary's Redis CPU, its jobs (those of the groups its shards
 *   hold) and its busy share;
 * - the noisy neighbour of fairness-light (a flood of one heavy group, light tenants submitting
 *   meanwhile; their submit-to-start wait) twice on fresh queues: the light tenants in another
 *   shard than the flood (on another primary), then in the flood's own shard.
 */
import { Redis } from 'ioredis';
import { open } from '../../src/bench/peers/rota.js';
import { addDeltas, groupOf, Phase, type RunContext, type RunResult, Seen, until } from '../../src/bench/workloads/common.js';
import { fill } from '../../src/bench/workloads/drain.js';
import { type FairnessParams, runFairness } from '../../src/bench/workloads/fairness.js';
import { BenchStore } from '../../src/redis/bench-store.js';
import { shardOfGroup } from '../../src/redis/shards.js';
import { moveEmptySlot } from '../../test/helpers/cluster.js';

export interface ClusterParams {
  shards: number;
  /** The drain: jobs, executor concurrency, groups, time cap. */
  jobs: number;
  concurrency: number;
  groups: number;
  capMs: number;
  /** The noisy neighbour, as fairness-light. */
  flood: Omit<FairnessParams, 'mode' | 'lightMs' | 'heavyGroup' | 'lightGroups'>;
}

type Node = { host: string; port: number };

/** The group of the flood; the light tenants' groups are chosen by the shard they hash to. */
const HEAVY = 'heavy';

/** The hash tag of each shard of `queue` (shards 0..n-1), then the home shard's when it is a shard of its own. */
function tags(queue: string, shards: number): string[] {
  const out = Array.from({ length: shards }, (_, i) => (shards === 1 ? `{rota:${queue}}` : `{rota:${queue}:${i}}`));
  if (shards > 1) out.push(`{rota:${queue}}`);
  return out;
}

/**
 * Moves the (still empty) slots of `queue`'s shards so that shard i is on primary i mod P and the
 * home shard on the primary after the last shard's; answers the primary (index) of each tag.
 */
export async function place(nodes: Node[], primaries: Redis[], queue: string, shards: number): Promise<number[]> {
  const all = tags(queue, shards);
  for (const [i, tag] of all.entries()) {
    const slot = (await primaries[0].cluster('KEYSLOT', tag)) as number;
    await moveEmptySlot(nodes, slot, nodes[i % nodes.length]);
  }
  // Read back: two tags may share a slot, and then the last move wins.
  const slots = await primaries[0].cluster('SLOTS');
  return Promise.all(
    all.map(async (tag) => {
      const slot = (await primaries[0].cluster('KEYSLOT', tag)) as number;
      const port = slots.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
      return nodes.findIndex((n) => n.port === port);
    }),
  );
}

/** `count` group names (`light-<k>`) whose shard is `shard`. */
function groupsIn(shard: number, shards: number, count: number): string[] {
  const out: string[] = [];
  for (let k = 0; out.length < count; k++) if (shardOfGroup(`light-${k}`, shards) === shard) out.push(`light-${k}`);
  return out;
}

export async function runCluster(nodes: Node[], queue: string, quick: boolean, p: ClusterParams): Promise<RunResult> {
  const primaries = nodes.map((n) => new Redis(n.port, n.host));
  const P = nodes.length;
  const target = { options: {}, nodes, shards: p.shards };
  try {
    // ---- the drain ----
    const placement = await place(nodes, primaries, queue, p.shards);
    const adapter = open(target, queue);
    const ctx: RunContext = {
      system: 'rota',
      at: `redis://${nodes[0].host}:${nodes[0].port}`,
      queue,
      adapter,
      admin: new BenchStore(primaries[0]),
      quick,
    };
    const seen = new Seen();
    const jobsOf = new Array<number>(P).fill(0);
    let drain: { seconds: number; capped: boolean; fillJobsPerSec: number; ends: Awaited<ReturnType<Phase['end']>>[] };
    try {
      const f0 = performance.now();
      await fill(ctx, p.jobs, p.groups);
      const fillJobsPerSec = p.jobs / ((performance.now() - f0) / 1000);
      // Jobs per primary: the groups of its shards (every group holds jobs/groups of them).
      const primaryOfGroup = new Map<string, number>();
      for (let g = 0; g < p.groups; g++)
        primaryOfGroup.set(groupOf(g, p.groups), placement[shardOfGroup(groupOf(g, p.groups), p.shards)]);
      const phases = await Promise.all(primaries.map((c) => new Phase(new BenchStore(c)).begin()));
      let n = 0;
      const exec = await adapter.startExecutor({
        concurrency: p.concurrency,
        handler: (id, group) => {
          seen.add(id);
          jobsOf[primaryOfGroup.get(group) ?? 0]++;
          n++;
        },
      });
      const capped = !(await until(() => n >= p.jobs, p.capMs));
      const seconds = phases[0].elapsed();
      await exec.close();
      drain = { seconds, capped, fillJobsPerSec, ends: await Promise.all(phases.map((ph) => ph.end())) };
    } finally {
      await adapter.close();
    }

    // ---- the noisy neighbour: light tenants in another shard than the flood, then in its own ----
    const heavyShard = shardOfGroup(HEAVY, p.shards);
    const floods: Array<['far' | 'near', number]> = [['near', heavyShard]];
    if (p.shards > 1) floods.unshift(['far', (heavyShard + 1) % p.shards]);
    const light: Record<string, RunResult> = {};
    for (const [where, shard] of floods) {
      const name = `${queue}-${where}`;
      await place(nodes, primaries, name, p.shards);
      const a = open(target, name);
      try {
        light[where] = await runFairness(
          { ...ctx, queue: name, adapter: a },
          {
            mode: 'flood',
            lightMs: 0,
            ...p.flood,
            heavyGroup: HEAVY,
            lightGroups: groupsIn(shard, p.shards, p.flood.lightTenants),
          },
        );
      } finally {
        await a.close();
      }
    }

    // ---- the figures ----
    const ran = seen.size + seen.duplicates;
    const cpu = drain.ends.map((e) => e.redis.cpuUs);
    const extra: Record<string, number | null> = {
      shards: p.shards,
      fillJobsPerSec: drain.fillJobsPerSec,
      homePrimary: p.shards > 1 ? placement[p.shards] : placement[0],
    };
    for (let s = 0; s < p.shards; s++) extra[`shard${s}Primary`] = placement[s];
    for (let k = 0; k < P; k++) {
      extra[`p${k}Jobs`] = jobsOf[k];
      extra[`p${k}CpuUs`] = cpu[k];
      // Per job of the groups this primary's shards hold (none: no figure).
      extra[`p${k}CpuUsPerJob`] = jobsOf[k] ? cpu[k] / jobsOf[k] : null;
      extra[`p${k}Busy`] = cpu[k] / 1e6 / drain.seconds;
    }
    extra.balance = Math.max(...cpu) / Math.max(1, Math.min(...cpu));
    // (none when a primary holds no shard: one shard on three primaries)
    extra.jobBalance = Math.min(...jobsOf) > 0 ? Math.max(...jobsOf) / Math.min(...jobsOf) : null;
    for (const [where, r] of Object.entries(light)) {
      extra[`${where}P50Ms`] = r.extra.p50Ms;
      extra[`${where}P99Ms`] = r.extra.p99Ms;
      extra[`${where}HeavyJobsPerSec`] = r.extra.heavyJobsPerSec;
      extra[`${where}LightJobs`] = r.extra.lightJobs;
    }
    const floodRuns = Object.values(light);
    return {
      jobs: ran,
      seconds: drain.seconds,
      jobsPerSec: ran / drain.seconds,
      redis: drain.ends.map((e) => e.redis).reduce(addDeltas),
      nodeCpuUs: drain.ends[0].nodeCpuUs,
      peakRssBytes: Math.max(drain.ends[0].peakRssBytes, ...floodRuns.map((r) => r.peakRssBytes)),
      // The exactly-once check covers the drain and the floods.
      expected: p.jobs + floodRuns.reduce((s, r) => s + r.expected, 0),
      unique: seen.size + floodRuns.reduce((s, r) => s + r.unique, 0),
      duplicates: seen.duplicates + floodRuns.reduce((s, r) => s + r.duplicates, 0),
      capped: drain.capped,
      extra,
    };
  } finally {
    for (const c of primaries) c.disconnect();
  }
}
