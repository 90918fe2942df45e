/**
 * `rota bench`: measures Rota (and, with `--compare`, BullMQ and GroupMQ) on the `--redis`
 * server, or on a private redis-server without one (see src/bench/bench.ts; docs/cli.md, "rota bench").
 * The hidden `rota bench-child runner|executor` is the bench's own child processes.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { BenchRefusal, runBench } from '../../bench/bench.js';
import { runExecutorChild } from '../../bench/executor-child.js';
import { checkPeers, PeerMissingError } from '../../bench/peers/open.js';
import type { Endpoint, SystemName } from '../../bench/peers/types.js';
import { WORKLOADS, type Workload } from '../../bench/plan.js';
import { describeReport, roundedReport } from '../../bench/report.js';
import { runRunnerChild } from '../../bench/runner.js';
import { type RunningRedis, startPrivateRedis } from '../../dev/redis-server.js';
import { BenchStore } from '../../redis/bench-store.js';
import { EXIT_INVALID, EXIT_UNREACHABLE } from '../exit-codes.js';
import { CliError, type Client, connectionOf, globals, intOption, openClient, printJson, run } from '../support.js';

const PEERS: SystemName[] = ['bullmq', 'groupmq'];

function workloadOption(value: string): Workload[] {
  if (value === 'all') return [...WORKLOADS];
  const names = value.split(',');
  for (const n of names) {
    if (!(WORKLOADS as readonly string[]).includes(n)) {
      throw new InvalidArgumentError(`--workload must be all or one or more of ${WORKLOADS.join(', ')}`);
    }
  }
  return WORKLOADS.filter((w) => names.includes(w));
}

function compareOption(value: string): SystemName[] {
  const names = value.split(',');
  for (const n of names) {
    if (!(PEERS as string[]).includes(n)) throw new InvalidArgumentError(`--compare takes ${PEERS.join(', ')}`);
  }
  return PEERS.filter((p) => names.includes(p));
}

interface BenchFlags {
  workload: Workload[];
  jobs: number;
  groups: number;
  concurrency: number;
  executors: number;
  handlerMs: number;
  payload: number;
  duration: number;
  compare?: SystemName[];
  force?: boolean;
  json?: boolean;
}

/** Connection options a child process can take over IPC (TLS files as PEM text). */
function portable(options: RedisOptions): RedisOptions {
  if (!options.tls) return options;
  const tls = Object.fromEntries(Object.entries(options.tls).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString('utf8') : v]));
  return { ...options, tls };
}

/** Registers `rota bench` and its hidden child command on `program`. */
export function register(program: Command): void {
  program
    .command('bench')
    .description('measure jobs/s, latency, fairness and Redis CPU per job on a Redis (a private one without --redis)')
    .addOption(
      new Option('--workload <name>', `all, or one or more of ${WORKLOADS.join(', ')} (comma-separated)`)
        .argParser(workloadOption)
        .default([...WORKLOADS], 'all'),
    )
    .option('--jobs <n>', 'jobs per workload (periodic: tasks)', intOption('--jobs', 1, 10_000_000), 20_000)
    .option('--groups <g>', 'groups the jobs are spread over', intOption('--groups', 1, 1_000_000), 1000)
    .option('--concurrency <c>', 'concurrency of each executor', intOption('--concurrency', 1, 10_000), 100)
    .option('--executors <p>', 'executor processes of the drain', intOption('--executors', 1, 64), 2)
    .option('--handler-ms <h>', "each handler's time, ms (fairness: 10 when 0)", intOption('--handler-ms', 0, 60_000), 0)
    .option('--payload <bytes>', "each job's payload size, bytes", intOption('--payload', 1, 1_000_000), 100)
    .option(
      '--duration <s>',
      'seconds of the latency workload; every workload stops at 20 times this',
      intOption('--duration', 1, 3600),
      3,
    )
    .option('--compare <peers>', `run the same workloads on ${PEERS.join(', ')} too (installed beside rota)`, compareOption)
    .option('--force', "run on a server whose maxmemory-policy evicts keys, or whose maxmemory the run's data could reach")
    .option('--json', 'print the report as one JSON object')
    .action(async (o: BenchFlags, cmd: Command) =>
      run(async () => {
        const g = globals(cmd);
        const source = cmd.parent?.getOptionValueSource('redis');
        const redisGiven = source === 'cli' || source === 'config' || Boolean(process.env.REDIS_URL);
        const shards = g.shards ?? 1;
        // (a peer that is not installed is named before anything starts)
        try {
          await checkPeers(o.compare ?? []);
        } catch (err) {
          if (err instanceof PeerMissingError) throw new CliError(err.message, EXIT_INVALID);
          throw err;
        }
        let server: RunningRedis | undefined;
        let client: Client;
        let at: Endpoint;
        if (redisGiven) {
          client = await openClient(g);
          const options = portable(connectionOf(g));
          const nodes =
            client instanceof Cluster
              ? client.nodes('master').map((n) => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 }))
              : undefined;
          at = { options, nodes, shards };
        } else {
          try {
            server = await startPrivateRedis();
          } catch (err) {
            throw new CliError((err as Error).message.replace('The demo needs', 'rota bench needs'), EXIT_UNREACHABLE);
          }
          const u = new URL(server.url);
          client = new Redis(server.url);
          at = { options: { host: u.hostname, port: Number(u.port), password: decodeURIComponent(u.password) }, shards };
        }
        client.on('error', () => {});
        const stop = async () => {
          client.disconnect();
          await server?.destroy();
        };
        try {
          const report = await runBench(
            {
              at,
              store: new BenchStore(client),
              privateServer: server !== undefined,
              force: Boolean(o.force),
              workloads: o.workload,
              systems: ['rota', ...(o.compare ?? [])],
              sizes: {
                jobs: o.jobs,
                groups: o.groups,
                concurrency: o.concurrency,
                executors: o.executors,
                handlerMs: o.handlerMs,
                payloadBytes: o.payload,
                durationS: o.duration,
              },
              shards,
              child: { script: process.argv[1], args: ['bench-child'] },
              progress: process.stderr,
            },
            stop,
          );
          if (o.json) printJson(roundedReport(report));
          else process.stdout.write(describeReport(report));
        } catch (err) {
          if (err instanceof BenchRefusal || err instanceof PeerMissingError) throw new CliError(err.message, EXIT_INVALID);
          throw new CliError(`bench: ${(err as Error).message}`, EXIT_INVALID);
        } finally {
          await stop();
        }
      }),
    );
  program
    .command('bench-child <role>', { hidden: true })
    .description('a child process of rota bench (runner or executor); not for use on its own')
    .action(async (role: string) => {
      if (role === 'runner') await runRunnerChild();
      else if (role === 'executor') await runExecutorChild();
      else throw new CliError('bench-child: the role is runner or executor', EXIT_INVALID);
    });
}
