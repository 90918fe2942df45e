/**
 * `rota bench` itself, below its flags: checks the server is safe to write to, runs the plan in a
 * runner process (./runner.ts), shows progress, removes every key of its namespace at the end
 * (on SIGINT and SIGTERM too) and builds the report (./report.ts).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { BenchStore } from '../redis/bench-store.js';
import { checkPeers } from './peers/open.js';
import type { Endpoint, SystemName } from './peers/types.js';
import type { BenchPlan, BenchSizes, RunnerMessage, RunRecord, Workload } from './plan.js';
import { Progress, type ProgressOut } from './progress.js';
import { type BenchReport, comparison, REPORT_VERSION, runReport, sizing } from './report.js';
import type { ExecutorEntry } from './workloads/common.js';

/** A refusal of the server (a replica, an evicting policy): nothing was written. */
export class BenchRefusal extends Error {}

/** Round trips above this many ms are reported as dominating the figures. */
export const SLOW_PING_MS = 1;

export interface BenchInput {
  at: Endpoint;
  store: BenchStore;
  /** The server was started by the bench (so it is not shared). */
  privateServer: boolean;
  force: boolean;
  workloads: Workload[];
  systems: SystemName[];
  sizes: BenchSizes;
  shards: number;
  /** How to start this program as a bench child: the script and arguments before the role (`runner`, `executor`). */
  child: ExecutorEntry;
  /** Progress lines go here (stderr). */
  progress: ProgressOut;
  /** The progress's clock (ms; default performance.now). */
  now?: () => number;
}

/** Refuses a replica, and an evicting `maxmemory-policy` unless forced; answers the warnings. */
async function checkServer(input: BenchInput): Promise<{ warnings: string[]; facts: Awaited<ReturnType<BenchStore['facts']>> }> {
  const warnings: string[] = [];
  const facts = await input.store.facts();
  if (facts.role !== 'master' && facts.role !== 'unknown') {
    throw new BenchRefusal(`${input.store.address} is a replica (role ${facts.role}): point --redis at its primary`);
  }
  if (facts.maxmemoryPolicy !== 'noeviction' && facts.maxmemoryPolicy !== 'unknown' && !input.force) {
    throw new BenchRefusal(
      `${input.store.address} evicts keys (maxmemory-policy ${facts.maxmemoryPolicy}): the bench's writes could push out other data; --force to run anyway`,
    );
  }
  if (facts.maxmemoryPolicy !== 'noeviction') warnings.push(`maxmemory-policy is ${facts.maxmemoryPolicy}, not noeviction`);
  const planned = plannedBytes(input);
  const room = roomOf(facts);
  if (room !== undefined && planned > room) {
    const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
    const message = `the bench plans up to ${mb(planned)} of data, and ${input.store.address} has ${mb(Math.max(0, room))} left below its maxmemory (${mb(facts.maxmemory ?? 0)}, ${mb(facts.usedMemory ?? 0)} used)`;
    if (!input.force) throw new BenchRefusal(`${message}: give fewer --jobs or a smaller --payload, or --force to run anyway`);
    warnings.push(message);
  }
  return { warnings, facts };
}

/**
 * Bytes a job may take in Redis beside its payload, counted high: its hash, its place in the
 * group's and the queue's indexes, its events and attempts, and each data structure's overhead.
 */
export const JOB_OVERHEAD_BYTES = 4096;

/** The most data the run could hold at once, counted high: every workload's jobs, as if none were removed before the end. */
export function plannedBytes(input: Pick<BenchInput, 'sizes' | 'workloads'>): number {
  return input.workloads.length * input.sizes.jobs * (input.sizes.payloadBytes + JOB_OVERHEAD_BYTES);
}

/** The bytes the server can take before maxmemory, or undefined when it sets none or hides it. */
function roomOf(facts: { maxmemory?: number; usedMemory?: number }): number | undefined {
  if (!facts.maxmemory || facts.usedMemory === undefined) return undefined;
  return facts.maxmemory - facts.usedMemory;
}

/**
 * The median PING round trip, with what this process saw meanwhile: how late its event loop ran
 * (the median delay of a 1 ms timer, ms) and the CPU it used (% of the ping's wall time). A busy
 * client's round trips are long because its event loop answers late, not because the network is slow.
 */
async function timedPing(store: BenchStore): Promise<{ pingMs: number; lagMs: number; cpuPct: number }> {
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const pingMs = await store.pingMs(15);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  lag.disable();
  // (the histogram's delays include its 1 ms resolution)
  const lagMs = Math.max(0, lag.percentile(50) / 1e6 - 1);
  return { pingMs, lagMs, cpuPct: wall > 0 ? ((cpu.user + cpu.system) / 1000 / wall) * 100 : 0 };
}

/**
 * The slow-ping warning, naming the likelier cause: this machine's CPU when the event loop ran
 * late by a good part of the round trip or the machine's load exceeds its cores, else the network.
 */
export function slowPingWarning(pingMs: number, lagMs: number, cpuPct: number, loadPerCore: number): string {
  const seen = `event loop ${lagMs.toFixed(2)} ms late, this process at ${cpuPct.toFixed(0)}% CPU, load ${loadPerCore.toFixed(2)} a core`;
  const cpuBound = lagMs >= pingMs / 4 || loadPerCore > 1;
  const cause = cpuBound
    ? "this machine's CPU is the likelier cause: the client answers late (run rota bench on a less loaded machine)"
    : 'the network is the likelier cause: the client answers at once (run rota bench near the server)';
  return `the round trip to the server is ${pingMs.toFixed(2)} ms: it, not Redis, bounds the figures; ${cause} (${seen})`;
}

/** Removes the namespace's keys (twice: the second sweep catches writes that were in flight); answers those left. */
async function sweep(store: BenchStore, ns: string): Promise<number> {
  await store.deleteNamespace(ns);
  await new Promise((r) => setTimeout(r, 200));
  await store.deleteNamespace(ns);
  return store.countNamespace(ns);
}

/**
 * Runs the bench and resolves to its report. On SIGINT or SIGTERM it stops the runner (and so its
 * executors), removes the namespace's keys, calls `onSignal` (to stop a private server) and exits
 * 130 or 143.
 */
export async function runBench(input: BenchInput, onSignal: () => Promise<void>): Promise<BenchReport> {
  const { warnings, facts } = await checkServer(input);
  await checkPeers(input.systems);
  const { pingMs, lagMs, cpuPct } = await timedPing(input.store);
  if (pingMs > SLOW_PING_MS) warnings.push(slowPingWarning(pingMs, lagMs, cpuPct, loadavg()[0] / availableParallelism()));
  const namespace = `rota-bench-${randomBytes(4).toString('hex')}`;
  const plan: BenchPlan = {
    at: input.at,
    namespace,
    workloads: input.workloads,
    systems: input.systems,
    sizes: input.sizes,
    executorEntry: { script: input.child.script, args: [...input.child.args, 'executor'] },
  };
  const progress = new Progress(input.progress, input.now);
  const records: RunRecord[] = [];
  let runner: ChildProcess | undefined;
  let keysLeft = 0;
  let stopping = false;
  const onStop = (signal: NodeJS.Signals) => {
    // (the run is left pending: this handler alone removes the keys, then exits)
    stopping = true;
    runner?.kill('SIGKILL');
    progress.end();
    input.progress.write(`rota bench: ${signal}: removing the keys of ${namespace}\n`);
    void sweep(input.store, namespace)
      .catch(() => {})
      .then(onSignal)
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onStop);
  process.once('SIGTERM', onStop);
  try {
    await new Promise<void>((resolve, reject) => {
      runner = fork(input.child.script, [...input.child.args, 'runner'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      let done = false;
      runner.on('message', (m: RunnerMessage) => {
        if (m.type === 'phase') progress.phase(m);
        else if (m.type === 'progress') progress.jobs(m.done, m.total);
        else if (m.type === 'record') records.push(m.record);
        else if (m.type === 'done') done = true;
        else if (!stopping) reject(new Error(m.message));
      });
      runner.once('error', reject);
      runner.once('exit', (code) => {
        if (stopping) return;
        if (done) resolve();
        else reject(new Error(`the bench runner ended (exit code ${code})`));
      });
      runner.send(plan);
    });
  } finally {
    progress.end();
    runner?.kill('SIGKILL');
    keysLeft = await sweep(input.store, namespace);
    process.off('SIGINT', onStop);
    process.off('SIGTERM', onStop);
  }
  const runs = records.map(runReport);
  return {
    version: REPORT_VERSION,
    server: {
      address: input.store.address,
      version: facts.version,
      role: facts.role,
      maxmemoryPolicy: facts.maxmemoryPolicy,
      private: input.privateServer,
      cluster: input.store.isCluster,
      primaries: input.store.primaries().length,
      pingMs,
    },
    settings: { ...input.sizes, shards: input.shards, workloads: input.workloads, systems: input.systems },
    namespace,
    warnings,
    runs,
    comparison: comparison(runs),
    sizing: sizing(runs, input.sizes),
    keysLeft,
  };
}
