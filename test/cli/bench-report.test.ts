/**
 * The report of `rota bench` from run records: figures per job, hidden figures as null, the
 * per-primary shares and balance, the sizing line and the ratios of --compare.
 */
import { describe, expect, it } from 'vitest';
import type { RunRecord } from '../../src/bench/plan.js';
import { comparison, describeReport, runReport, sizing } from '../../src/bench/report.js';
import type { RunResult } from '../../src/bench/workloads/common.js';

const SIZES = { jobs: 1000, groups: 10, concurrency: 100, executors: 2, handlerMs: 40, payloadBytes: 100, durationS: 3 };

function result(over: Partial<RunResult> = {}): RunResult {
  return {
    jobs: 1000,
    seconds: 0.5,
    jobsPerSec: 2000,
    redis: { cpuUs: 25_000, commands: 4400, scriptCalls: 20, byCommand: {}, ms: 500 },
    nodeCpuUs: 100_000,
    peakRssBytes: 0,
    expected: 1000,
    unique: 1000,
    duplicates: 0,
    capped: false,
    extra: {},
    ...over,
  };
}

const record = (over: Partial<RunRecord> = {}): RunRecord => ({
  workload: 'drain',
  system: 'rota',
  result: result(),
  primaries: ['127.0.0.1:6379'],
  ...over,
});

describe('rota bench report', () => {
  it('gives figures per job and the share of a core', () => {
    const r = runReport(record());
    expect(r).toMatchObject({
      jobsPerSec: 2000,
      redisCpuUsPerJob: 25,
      redisCommandsPerJob: 4.4,
      redisBusyPct: 5,
      clientCpuUsPerJob: 100,
      p50Ms: null,
      balance: 1,
      primaries: [{ address: '127.0.0.1:6379', cpuUs: 25_000, busyPct: 5 }],
    });
  });

  it('reports what the server hides as null, and says so in the text', () => {
    const hidden = result({
      redis: { cpuUs: Number.NaN, commands: Number.NaN, scriptCalls: Number.NaN, byCommand: {}, ms: 500 },
    });
    const r = runReport(record({ result: hidden }));
    expect(r.redisCpuUsPerJob).toBeNull();
    expect(r.redisCommandsPerJob).toBeNull();
    expect(r.primaries[0].busyPct).toBeNull();
    const s = sizing([r], SIZES)!;
    expect(s.redisCorePct).toBeNull();
    expect(s.text).toMatch(/about 2,000 jobs\/s \(its CPU is hidden\)/);
  });

  it('takes each primary of a Cluster from the summed phase, with the balance', () => {
    const r = runReport(
      record({
        result: result({
          redis: { cpuUs: 60_000, partsCpuUs: [10_000, 20_000, 30_000], commands: 1, scriptCalls: 0, byCommand: {}, ms: 1000 },
        }),
        primaries: ['a:1', 'b:2', 'c:3'],
      }),
    );
    expect(r.primaries.map((p) => p.busyPct)).toEqual([1, 2, 3]);
    expect(r.balance).toBe(3);
    // the busiest primary bounds the sizing
    expect(sizing([r], SIZES)!.redisCorePct).toBe(3);
  });

  it('bounds what the executors keep up with by P × C / H, and by the server', () => {
    const r = runReport(record());
    // 2 × 100 / 0.040 s = 5,000 jobs/s, above the server's 2,000
    expect(sizing([r], SIZES)).toMatchObject({ keepUpJobsPerSec: 2000, redisCorePct: 5 });
    const slow = sizing([r], { ...SIZES, handlerMs: 400 })!;
    expect(slow.keepUpJobsPerSec).toBe(500);
    expect(slow.text).toBe(
      'this server sustains about 2,000 jobs/s at 5 % of one core; with 400 ms handlers, 2 executors of concurrency 100 keep up with 500 jobs/s',
    );
    expect(sizing([], SIZES)).toBeNull();
  });

  it("compares Rota's figures with each peer's, per workload", () => {
    const runs = [
      runReport(record()),
      runReport(record({ system: 'bullmq', result: result({ jobsPerSec: 500 }) })),
      runReport(record({ workload: 'latency', result: result({ extra: { p50Ms: 1, p99Ms: 2 } }) })),
      runReport(record({ workload: 'latency', system: 'groupmq', result: result({ extra: { p50Ms: 2, p99Ms: 8 } }) })),
    ];
    expect(comparison(runs)).toEqual([
      { workload: 'drain', peer: 'bullmq', jobsPerSec: 4, p99Ms: null },
      { workload: 'latency', peer: 'groupmq', jobsPerSec: 1, p99Ms: 0.25 },
    ]);
  });

  it('prints the runs, the comparison and the sizing line', () => {
    const runs = [runReport(record()), runReport(record({ system: 'bullmq', result: result({ jobsPerSec: 500 }) }))];
    const text = describeReport({
      version: 1,
      server: {
        address: '127.0.0.1:6379',
        version: '7.2.4',
        role: 'master',
        maxmemoryPolicy: 'noeviction',
        private: true,
        cluster: false,
        primaries: 1,
        pingMs: 0.1,
      },
      settings: { ...SIZES, shards: 1, workloads: ['drain'], systems: ['rota', 'bullmq'] },
      namespace: 'rota-bench-00000000',
      warnings: ['a warning'],
      runs,
      comparison: comparison(runs),
      sizing: sizing(runs, SIZES),
      keysLeft: 0,
    });
    expect(text).toMatch(
      /^rota bench: Redis 7\.2\.4 at 127\.0\.0\.1:6379 \(private server\), ping 0\.10 ms\nwarning: a warning\n/,
    );
    expect(text).toMatch(/^drain +rota +2,000 +- +- +25\.0 +4\.4 +100\.0$/m);
    expect(text).toMatch(/^drain +jobs\/s +2,000 +500 +4\.00×$/m);
    expect(text).toMatch(/^sizing: this server sustains about 2,000 jobs\/s at 5 % of one core;/m);
  });
});
