/** `rota dashboard`: serves the web dashboard of one or more queues. */
import type { Command } from 'commander';
import { serveDashboard } from '../../dashboard/serve.js';
import type { HealthServer } from '../../observability/health.js';
import { EXIT_INVALID, EXIT_USAGE } from '../exit-codes.js';
import { healthHostOption, serveHealthFlags } from '../observability-flags.js';
import { keepSecret } from '../secrets.js';
import { CliError, globals, intOption, openTarget, readSecretFile, run } from '../support.js';

/**
 * Every queue named with `--queue` on the command line (it may be repeated: `--queue a --queue b`).
 * The program's global `--queue` keeps only the last one, so they are read from its raw arguments.
 */
export function queuesOf(rawArgs: readonly string[], fallback: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const a = rawArgs[i];
    if (a === '--queue' && i + 1 < rawArgs.length) out.push(rawArgs[++i]);
    else if (a.startsWith('--queue=')) out.push(a.slice(8));
  }
  return out.length ? [...new Set(out)] : [fallback];
}

/** Registers the `dashboard` command on `program`. */
export function register(program: Command): void {
  program
    .command('dashboard')
    .description('serve the web dashboard (repeat --queue to show several queues)')
    .option('--port <port>', 'port to listen on', intOption('--port', 0, 65535), 8080)
    .option('--host <address>', 'address to bind; other than 127.0.0.1 it needs a token', '127.0.0.1')
    .option('--read-only', 'show no action and refuse them')
    .option(
      '--token <token>',
      'access token every request must carry (default: $ROTA_DASHBOARD_TOKEN; visible in the process list: prefer that or --token-file)',
    )
    .option('--token-file <file>', 'read the access token from this file')
    .option('--base-path <path>', 'path to serve under, e.g. /rota')
    .option('--health-port <port>', 'serve /readyz and /livez on this port', intOption('--health-port', 0, 65535))
    .addOption(healthHostOption())
    .option(
      '--allowed-host <host>',
      'a host name browsers reach the dashboard by (repeatable; name, name:port, or .domain for it and its subdomains); others than loopback and the address bound are refused (421)',
      (v: string, all: string[]) => [...all, v],
      [] as string[],
    )
    .option('--trust-proxy', 'behind a proxy: trust its X-Forwarded-Proto (Secure cookies) and X-Forwarded-For')
    .action(
      async (
        o: {
          port: number;
          host: string;
          readOnly?: boolean;
          token?: string;
          tokenFile?: string;
          basePath?: string;
          trustProxy?: boolean;
          allowedHost: string[];
          healthPort?: number;
          healthHost?: string;
        },
        cmd: Command,
      ) =>
        run(async () => {
          const g = globals(cmd);
          const queues = queuesOf((program as unknown as { rawArgs: string[] }).rawArgs, g.queue);
          if (o.token !== undefined && o.tokenFile !== undefined)
            throw new CliError('give --token or --token-file, not both', EXIT_USAGE);
          const token =
            o.token ??
            (o.tokenFile !== undefined ? readSecretFile('--token-file', o.tokenFile) : process.env.ROTA_DASHBOARD_TOKEN);
          keepSecret(token);
          // (each queue's shard count: --shards, else the count its layout records; a Cluster's nodes)
          const target = await openTarget(g, queues);
          let served: Awaited<ReturnType<typeof serveDashboard>>;
          try {
            served = await serveDashboard({
              connection: target.connection,
              queues,
              host: o.host,
              port: o.port,
              readOnly: o.readOnly,
              token: token || undefined,
              basePath: o.basePath,
              trustProxy: o.trustProxy,
              allowedHosts: o.allowedHost,
              shards: target.shards,
            });
          } catch (err) {
            target.close();
            if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
              throw new CliError(`--port: ${o.port} is in use on ${o.host}`, EXIT_INVALID);
            }
            throw err;
          }
          process.stdout.write(`rota dashboard of ${queues.join(', ')} on ${served.url}${o.readOnly ? ' (read-only)' : ''}\n`);
          let health: HealthServer | undefined;
          const { healthPort } = o;
          if (healthPort !== undefined) {
            try {
              health = await serveHealthFlags({ ...o, healthPort }, () => served.handler.health());
            } catch (err) {
              await served.close().catch(() => {});
              target.close();
              throw err;
            }
            process.stdout.write(`rota dashboard health on ${health.url}/readyz and /livez\n`);
          }
          await new Promise<void>((resolve) => {
            const stop = () => {
              process.off('SIGINT', stop);
              process.off('SIGTERM', stop);
              void Promise.all([served.close(), health?.close()])
                .catch(() => {})
                .finally(() => {
                  target.close();
                  resolve();
                });
            };
            process.on('SIGINT', stop);
            process.on('SIGTERM', stop);
          });
        }),
    );
}
