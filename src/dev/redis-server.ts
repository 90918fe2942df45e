/**
 * Starts and stops private `redis-server` processes: for the demo, tests and benchmarks.
 * A server listens on a free loopback port, keeps its data in a temporary directory,
 * and can be stopped gracefully, killed with SIGKILL, and restarted on the same port and data.
 * On a machine without `redis-server` but with a Docker engine, {@link startRedis} runs Redis in a
 * container instead (testcontainers, a development dependency, imported only then).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface RedisServerOptions {
  /** Port to listen on; a free one is chosen when left out. */
  port?: number;
  /** Data directory; a new temporary one when left out. */
  dir?: string;
  /** Turn on the append-only file with `appendfsync` set to this. */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** Start it as a Redis Cluster node (slots unassigned until a `redis-cli --cluster create`). */
  cluster?: boolean;
  /** More `redis-server` arguments, e.g. `['--requirepass', 'secret']`. */
  args?: string[];
  /** More environment variables for the server process (e.g. a faked clock's). */
  env?: NodeJS.ProcessEnv;
  /** The password the server asks of every client (`requirepass`); its URL carries it. */
  password?: string;
}

/** Finds a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether a TCP port on 127.0.0.1 can be listened on now. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A Redis Cluster node's bus port is its port plus this. */
export const CLUSTER_BUS_OFFSET = 10_000;

/**
 * The ports a Cluster node is given: its bus port (port + {@link CLUSTER_BUS_OFFSET}) must be a port
 * too, and both stay below the kernel's ephemeral range (32,768 and up on Linux), where an outgoing
 * connection could take one of them between the draw and the node's start.
 */
export const CLUSTER_PORTS = { min: 10_000, max: 32_767 - CLUSTER_BUS_OFFSET } as const;

/**
 * A port for a Redis Cluster node (see {@link CLUSTER_PORTS}) that is free on 127.0.0.1, with its
 * bus port free too. `random` (0 to 1, as Math.random) picks the candidates.
 * @throws {Error} when 1,000 candidates in a row were taken.
 */
export async function freeClusterPort(random: () => number = Math.random): Promise<number> {
  const span = CLUSTER_PORTS.max - CLUSTER_PORTS.min + 1;
  for (let tries = 0; tries < 1000; tries += 1) {
    const port = CLUSTER_PORTS.min + Math.floor(random() * span);
    if ((await portIsFree(port)) && (await portIsFree(port + CLUSTER_BUS_OFFSET))) return port;
  }
  throw new Error(`no free Cluster port (with its bus port) from ${CLUSTER_PORTS.min} to ${CLUSTER_PORTS.max}`);
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.write('PING\r\n');
        sock.once('data', (d) => {
          sock.destroy();
          resolve(/^(\+PONG|-NOAUTH)/.test(d.toString()));
        });
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A private redis-server process. */
export class RedisServer {
  readonly port: number;
  readonly dir: string;
  private proc: ChildProcess | null = null;
  private readonly ownsDir: boolean;
  private readonly appendfsync?: RedisServerOptions['appendfsync'];
  private readonly cluster: boolean;
  private readonly extraArgs: string[];
  private readonly env?: NodeJS.ProcessEnv;
  private readonly password?: string;

  private constructor(port: number, dir: string, ownsDir: boolean, opts: RedisServerOptions) {
    this.port = port;
    this.dir = dir;
    this.ownsDir = ownsDir;
    this.appendfsync = opts.appendfsync;
    this.cluster = opts.cluster ?? false;
    this.extraArgs = opts.args ?? [];
    this.env = opts.env;
    this.password = opts.password;
  }

  /** Starts a server and resolves once it answers PING. */
  static async start(opts: RedisServerOptions = {}): Promise<RedisServer> {
    // (a Cluster node needs its bus port free as well, see freeClusterPort)
    const port = opts.port ?? (await (opts.cluster ? freeClusterPort() : freePort()));
    const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'rota-redis-'));
    const server = new RedisServer(port, dir, !opts.dir, opts);
    await server.restart();
    return server;
  }

  /** The URL clients connect with. */
  get url(): string {
    const auth = this.password === undefined ? '' : `:${encodeURIComponent(this.password)}@`;
    return `redis://${auth}127.0.0.1:${this.port}`;
  }

  /** The server's process id, while it runs. */
  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** (Re)starts the server on the same port and data directory. */
  async restart(): Promise<void> {
    if (this.proc) throw new Error('redis-server is already running');
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--daemonize',
      'no',
      '--logfile',
      join(this.dir, 'redis.log'),
      ...settingArgs(this.appendfsync),
    ];
    if (this.cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(this.dir, 'nodes.conf'));
    if (this.password !== undefined) args.push('--requirepass', this.password);
    args.push(...this.extraArgs);
    // Its own process group, so a Ctrl-C in the terminal reaches the program, which then stops
    // the server after it has closed its connections; and it never outlives this process.
    const proc = spawn('redis-server', args, {
      stdio: 'ignore',
      detached: true,
      env: this.env ? { ...process.env, ...this.env } : undefined,
    });
    this.proc = proc;
    const reap = () => proc.kill('SIGKILL');
    process.once('exit', reap);
    proc.once('exit', () => {
      process.off('exit', reap);
      if (this.proc === proc) this.proc = null;
    });
    await new Promise<void>((resolve, reject) => {
      proc.once('spawn', () => resolve());
      proc.once('error', (err) =>
        reject(new Error(`cannot start redis-server (${err.message}); install it with: apt-get install -y redis-server`)),
      );
    });
    await waitForPort(this.port, 10_000);
  }

  /** Stops the server with the given signal and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    await exited;
    this.proc = null;
  }

  /** Kills the server with SIGKILL, as a crash would. */
  kill(): Promise<void> {
    return this.stop('SIGKILL');
  }

  /** Stops the server and removes a data directory it created. */
  async destroy(): Promise<void> {
    await this.stop('SIGKILL');
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The settings every private server runs with: no snapshots, no eviction, the append-only file as asked. */
function settingArgs(appendfsync: RedisServerOptions['appendfsync']): string[] {
  const args = ['--save', '', '--maxmemory-policy', 'noeviction'];
  if (appendfsync) args.push('--appendonly', 'yes', '--appendfsync', appendfsync);
  else args.push('--appendonly', 'no');
  return args;
}

/** The Redis image a container runs: the version of Debian's redis-server, which CI installs. */
export const REDIS_IMAGE = 'redis:7.0.15';

/** Where a private Redis comes from: the local `redis-server`, a container, or nowhere. */
export type RedisSource = 'local' | 'container' | 'missing';

/** What {@link chooseRedisSource} decides on. */
export interface RedisSourceProbe {
  /** `redis-server` is an executable on PATH. */
  redisServerOnPath: boolean;
  /** A Docker engine answers (as testcontainers finds it). */
  dockerReachable: boolean;
}

/** The local redis-server when there is one (fast, and fault tests can kill it); else a container; else none. */
export function chooseRedisSource(probe: RedisSourceProbe): RedisSource {
  if (probe.redisServerOnPath) return 'local';
  if (probe.dockerReachable) return 'container';
  return 'missing';
}

/** The one line shown when there is neither a redis-server nor a Docker engine, for the tests or the demo. */
export function noRedisMessage(forWhat: 'tests' | 'demo'): string {
  const install = 'install redis-server (apt-get install -y redis-server, or brew install redis)';
  return forWhat === 'tests'
    ? `The tests need Redis: ${install}, or start a Docker engine to run ${REDIS_IMAGE} in containers.`
    : `The demo needs Redis: ${install}, start a Docker engine, or set REDIS_URL (or --redis) to a Redis to use.`;
}

/** True when an executable named `name` is in one of PATH's directories. */
export function onPath(name: string, path = process.env.PATH ?? ''): boolean {
  return path
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return statSync(file).isFile();
      } catch {
        return false;
      }
    });
}

/** True when testcontainers is installed and finds a Docker engine. */
export async function dockerReachable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/** Looks at this machine and decides where a private Redis comes from (Docker is probed only without redis-server). */
export async function findRedisSource(): Promise<RedisSource> {
  const local = onPath('redis-server');
  return chooseRedisSource({ redisServerOnPath: local, dockerReachable: !local && (await dockerReachable()) });
}

/** A private Redis that is running: where to connect, and how to remove it. */
export interface RunningRedis {
  readonly url: string;
  destroy(): Promise<void>;
}

/**
 * Starts a private Redis from `source`: a local redis-server, or a container where there is none
 * (which takes `args` and `appendfsync` of `opts`, but no cluster mode, port, directory or environment).
 * Fails with {@link noRedisMessage} when there is neither.
 */
export async function startRedis(
  opts: RedisServerOptions = {},
  source?: RedisSource,
  forWhat: 'tests' | 'demo' = 'tests',
): Promise<RunningRedis> {
  const from = source ?? (await findRedisSource());
  if (from === 'local') return RedisServer.start(opts);
  if (from === 'missing') throw new Error(noRedisMessage(forWhat));
  if (opts.cluster || opts.port !== undefined || opts.dir !== undefined || opts.env !== undefined) {
    throw new Error(`a Redis with these options needs a local redis-server: ${noRedisMessage(forWhat)}`);
  }
  const { GenericContainer, Wait } = await import('testcontainers');
  const auth = opts.password === undefined ? [] : ['--requirepass', opts.password];
  const container = await new GenericContainer(REDIS_IMAGE)
    .withExposedPorts(6379)
    .withCommand(['redis-server', ...settingArgs(opts.appendfsync), ...auth, ...(opts.args ?? [])])
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const userinfo = opts.password === undefined ? '' : `:${encodeURIComponent(opts.password)}@`;
  return {
    url: `redis://${userinfo}${container.getHost()}:${container.getMappedPort(6379)}`,
    destroy: async () => {
      await container.stop();
    },
  };
}

/**
 * The private Redis of `rota demo` and `rota bench` without `--redis`: on 127.0.0.1 only, with a
 * random password that its URL carries, so that other users of the machine cannot reach it.
 */
export function startPrivateRedis(forWhat: 'tests' | 'demo' = 'demo'): Promise<RunningRedis> {
  return startRedis({ password: randomBytes(24).toString('base64url') }, undefined, forWhat);
}
