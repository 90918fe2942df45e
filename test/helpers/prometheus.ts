/**
 * A private Prometheus server for tests (Debian's `prometheus`, on a free port of 127.0.0.1): its
 * configuration and data in a temporary folder of its own, removed by `destroy()`, its
 * configuration replaced with `reload()`, and PromQL evaluated through its HTTP API.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis-server.js';
import { eventually } from './setup.js';

/** One element of an instant vector, as the query API gives it. */
export interface Sample {
  metric: Record<string, string>;
  value: number;
}

/** A Prometheus this test started. */
export interface RunningPrometheus {
  readonly url: string;
  /** Writes `config` (prometheus.yml's text) and has the server load it; rejects if it refuses it. */
  reload(config: string): Promise<void>;
  /** The instant vector `promql` gives now (an empty array when it selects nothing). */
  query(promql: string): Promise<Sample[]>;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

/** Starts Prometheus with `config` (prometheus.yml's text) and resolves once it is ready. */
export async function startPrometheus(config: string): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'rota-prometheus-'));
  const file = join(dir, 'prometheus.yml');
  writeFileSync(file, config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = '';
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${file}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-lifecycle',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr?.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const spawned = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) =>
      reject(new Error(`cannot run prometheus (Debian's package \`prometheus\`; .ci/run installs it): ${err.message}`)),
    );
  });
  const destroy = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await spawned;
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${log}`);
      try {
        return (await fetch(`${url}/-/ready`)).ok;
      } catch {
        return false;
      }
    }, 60_000);
  } catch (err) {
    await destroy();
    throw err;
  }
  return {
    url,
    async reload(next) {
      writeFileSync(file, next);
      const res = await fetch(`${url}/-/reload`, { method: 'POST' });
      if (!res.ok) throw new Error(`prometheus refused the configuration (${res.status}): ${await res.text()}\n${log}`);
    },
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: promql })}`);
      const body = (await res.json()) as {
        status: string;
        error?: string;
        data?: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
      };
      if (body.status !== 'success' || body.data?.resultType !== 'vector') {
        throw new Error(`query ${promql} gave ${body.error ?? body.data?.resultType}`);
      }
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    destroy,
  };
}
