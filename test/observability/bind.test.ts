/**
 * Where the metrics and health servers listen: 127.0.0.1 unless told otherwise (neither has
 * authentication, and the metrics name queues and groups), checked by connecting to an address
 * of this machine that is not loopback; the `host` option and `--metrics-host` / `--health-host`
 * are honoured, and the URL a server gives (and the CLI logs) is the address it bound.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, serveMetrics } from '../../src/index.js';
import { serveHealth } from '../../src/observability/health.js';
import { cliEntry, rota } from '../helpers/cli.js';
import { eventually, redisUrl, uniqueQueue } from '../helpers/setup.js';

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

/** An IPv4 address of this machine that is not loopback (undefined: it has none). */
const outside = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/** Whether a TCP connection to `host`:`port` is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

const healthy = () => ({ live: true, ready: true, checks: {} });

describe('the metrics and health servers', () => {
  it('bind 127.0.0.1 by default: not reachable at another address of this machine', async () => {
    const queue = new Queue(uniqueQueue('bind'), { connection: redisUrl() });
    open.push(queue);
    const metrics = await serveMetrics({ port: 0, queue });
    const health = await serveHealth({ port: 0, check: healthy });
    open.push(metrics, health);
    for (const server of [metrics, health]) {
      expect(server.host).toBe('127.0.0.1');
      expect(new URL(server.url).host).toBe(`127.0.0.1:${server.port}`);
      expect(await accepts('127.0.0.1', server.port)).toBe(true);
      if (outside) expect(await accepts(outside, server.port), `${server.url} at ${outside}`).toBe(false);
    }
    expect((await fetch(metrics.url)).status).toBe(200);
    expect((await fetch(`${health.url}/readyz`)).status).toBe(200);
  });

  it('bind the host given, and give its address in their URL', async () => {
    const queue = new Queue(uniqueQueue('bind'), { connection: redisUrl() });
    open.push(queue);
    const metrics = await serveMetrics({ port: 0, host: '0.0.0.0', queue });
    const health = await serveHealth({ port: 0, host: '0.0.0.0', check: healthy });
    open.push(metrics, health);
    for (const server of [metrics, health]) {
      expect(server.host).toBe('0.0.0.0');
      expect(new URL(server.url).host).toBe(`0.0.0.0:${server.port}`);
      if (outside) expect(await accepts(outside, server.port)).toBe(true);
    }
  });
});

describe('rota scheduler --metrics-host and --health-host', () => {
  /** Spawns `rota ...args` and resolves the metrics and health URLs it logs. */
  async function start(args: string[]): Promise<{ child: ChildProcess; metrics: string; health: string }> {
    const child = spawn(process.execPath, [...cliEntry(), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    open.push({
      close: async () => {
        if (child.exitCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGTERM');
          await exited;
        }
      },
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const url = (msg: string) => new RegExp(`"url":"(http://[^"]+)","msg":"${msg}"`).exec(out)?.[1];
    const [metrics, health] = await eventually(async () => {
      const m = url('serving metrics');
      const h = url('serving health');
      return m && h && [m, h];
    }, 30_000);
    return { child, metrics, health };
  }

  it('serve loopback only by default and log that address; 0.0.0.0 when asked, with top:N groups', async () => {
    const name = uniqueQueue('bind');
    const queue = new Queue(name, { connection: redisUrl() });
    open.push(queue);
    await queue.submitBulk([
      { task: 'noop', group: 'big' },
      { task: 'noop', group: 'big' },
      { task: 'noop', group: 'small' },
    ]);
    const q = ['--redis', redisUrl(), '--queue', name, 'scheduler', '--metrics-port', '0', '--health-port', '0'];

    const local = await start(q);
    for (const url of [local.metrics, local.health]) {
      const { hostname, port } = new URL(url);
      expect(hostname).toBe('127.0.0.1');
      if (outside) expect(await accepts(outside, Number(port)), url).toBe(false);
    }
    const body = await (await fetch(local.metrics)).text();
    expect(body).toContain(`rota_jobs{queue="${name}",state="waiting"} 3`);
    expect(body).not.toMatch(/group="/);

    const wide = await start([
      ...q,
      '--metrics-host',
      '0.0.0.0',
      '--health-host',
      '0.0.0.0',
      '--metrics-groups',
      'top:1',
      '--metrics-sweep-interval',
      '60000',
    ]);
    for (const url of [wide.metrics, wide.health]) {
      const { hostname, port } = new URL(url);
      expect(hostname).toBe('0.0.0.0');
      if (outside) expect(await accepts(outside, Number(port)), url).toBe(true);
    }
    const top = await (await fetch(wide.metrics)).text();
    expect(top).toContain(`rota_group_waiting{queue="${name}",group="big"} 2`);
    expect(top).not.toContain('group="small"');
  });

  it('bind the dashboard’s health server where --health-host says', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('bind'), 'dashboard', '--port', '0', '--health-port', '0'];
    const child = spawn(process.execPath, [...cliEntry(), ...q, '--health-host', '0.0.0.0'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    open.push({
      close: async () => {
        if (child.exitCode === null) child.kill('SIGTERM');
        await exited;
      },
    });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const url = await eventually(async () => /health on (http:\/\/\S+)\/readyz/.exec(out)?.[1], 30_000);
    const { hostname, port } = new URL(url);
    expect(hostname).toBe('0.0.0.0');
    if (outside) expect(await accepts(outside, Number(port))).toBe(true);
  });

  it('refuses a bad --metrics-groups or --metrics-sweep-interval', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('bind'), 'scheduler', '--metrics-port', '0'];
    const groups = await rota([...q, '--metrics-groups', 'top:0']);
    expect(groups.code).toBe(1);
    expect(groups.stderr).toMatch(/--metrics-groups must be none, all or top:N/);
    const interval = await rota([...q, '--metrics-sweep-interval', '5']);
    expect(interval.code).toBe(1);
    expect(interval.stderr).toMatch(/--metrics-sweep-interval must be a whole number from 1000 to 3600000/);
  });
});
