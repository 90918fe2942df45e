/**
 * The flags of the metrics and health servers that `rota worker`, `rota scheduler` and
 * `rota dashboard` take, and serving them. Both bind 127.0.0.1 unless `--metrics-host` or
 * `--health-host` says otherwise (neither has authentication; a pod binds 0.0.0.0).
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { type HealthServer, serveHealth } from '../observability/health.js';
import { DEFAULT_HOST } from '../observability/listen.js';
import { groupLabels, type MetricsOptions, type MetricsServer, serveMetrics } from '../observability/metrics.js';
import type { Health } from '../util/health.js';
import { EXIT_INVALID } from './exit-codes.js';
import { CliError, intOption } from './support.js';

/** What the metrics flags give. */
export interface MetricsFlags {
  metricsPort?: number;
  metricsHost?: string;
  metricsGroups?: MetricsOptions['groups'];
  metricsSweepInterval?: number;
}

/** What the health flags give. */
export interface HealthFlags {
  healthPort?: number;
  healthHost?: string;
}

/** An address to bind: an IP address or a host name, as `listen` takes it. */
function hostOption(name: string) {
  return (value: string): string => {
    if (!/^[\w.:%-]{1,255}$/.test(value)) throw new InvalidArgumentError(`${name} must be an address such as 0.0.0.0`);
    return value;
  };
}

/** `--metrics-host`, the address of `--metrics-port`. */
export function metricsHostOption(): Option {
  return new Option(
    '--metrics-host <address>',
    `address the metrics bind (default ${DEFAULT_HOST}; 0.0.0.0 for Prometheus to reach a pod)`,
  ).argParser(hostOption('--metrics-host'));
}

/** `--metrics-groups none|top:N|all`. */
export function metricsGroupsOption(): Option {
  return new Option(
    '--metrics-groups <which>',
    'groups with series of their own (group names as labels): none, top:N (the N deepest) or all (default none)',
  ).argParser((value: string) => {
    if (!groupLabels(value)) throw new InvalidArgumentError('--metrics-groups must be none, all or top:N (N from 1 to 100000)');
    return value as MetricsOptions['groups'];
  });
}

/** `--metrics-sweep-interval`. */
export function metricsSweepIntervalOption(): Option {
  return new Option(
    '--metrics-sweep-interval <ms>',
    'read Redis for the metrics at most once per this many ms, shared by every scrape (default 10000)',
  ).argParser(intOption('--metrics-sweep-interval', 1000, 3_600_000));
}

/**
 * Adds the flags of both servers to `cmd`: `--metrics-port`, `--metrics-host`, `--metrics-groups`,
 * `--metrics-sweep-interval`, `--health-port`, `--health-host` (what {@link MetricsFlags} and
 * {@link HealthFlags} give).
 */
export function serverFlags(cmd: Command): Command {
  return cmd
    .option('--metrics-port <port>', 'serve Prometheus metrics on this port', intOption('--metrics-port', 0, 65535))
    .addOption(metricsHostOption())
    .addOption(metricsGroupsOption())
    .addOption(metricsSweepIntervalOption())
    .option('--health-port <port>', 'serve /readyz and /livez on this port', intOption('--health-port', 0, 65535))
    .addOption(healthHostOption());
}

/** `--health-host`, the address of `--health-port`. */
export function healthHostOption(): Option {
  return new Option(
    '--health-host <address>',
    `address /readyz and /livez bind (default ${DEFAULT_HOST}; 0.0.0.0 for a kubelet to probe a pod)`,
  ).argParser(hostOption('--health-host'));
}

/** A listen error as the CLI reports it: a port in use, or an address this host does not have. */
function listenError(flag: string, port: number, host: string, err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new CliError(`${flag}: ${port} is in use on ${host}`, EXIT_INVALID);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new CliError(`${flag.replace('port', 'host')}: cannot bind ${host} (${code})`, EXIT_INVALID);
  return err;
}

/**
 * Serves `/readyz` and `/livez` on `--health-port` and `--health-host` (see
 * ../observability/health.ts); a port in use is a CliError (EXIT_INVALID).
 */
export async function serveHealthFlags(o: HealthFlags & { healthPort: number }, check: () => Health): Promise<HealthServer> {
  const host = o.healthHost ?? DEFAULT_HOST;
  try {
    return await serveHealth({ port: o.healthPort, host, check });
  } catch (err) {
    throw listenError('--health-port', o.healthPort, host, err);
  }
}

/** Serves the metrics as the flags say; a port in use is a CliError (EXIT_INVALID). */
export async function serveMetricsFlags(
  o: MetricsFlags & { metricsPort: number },
  rest: Pick<MetricsOptions, 'queue' | 'workers' | 'schedulers' | 'onError'>,
): Promise<MetricsServer> {
  const host = o.metricsHost ?? DEFAULT_HOST;
  try {
    return await serveMetrics({
      ...rest,
      port: o.metricsPort,
      host,
      groups: o.metricsGroups,
      sweepIntervalMs: o.metricsSweepInterval,
    });
  } catch (err) {
    throw listenError('--metrics-port', o.metricsPort, host, err);
  }
}
