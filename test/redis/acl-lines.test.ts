/**
 * The ACL lines of docs/operations.md are the ones src/redis/acl.ts makes, and its command lists
 * hold every command the scripts (lua/) and the stores (src/redis/) send. The CLI works as the
 * runtime user the lines make (it sends PING first, which the line once lacked).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { aclLines, commandsOf, RUNTIME_ROLES } from '../../src/redis/acl.js';
import { loadLibrary } from '../../src/redis/library.js';
import { rota } from '../helpers/cli.js';
import { startCluster } from '../helpers/cluster.js';
import { RedisServer } from '../helpers/redis-server.js';
import { eventually } from '../helpers/setup.js';

/** Applies the generated ACL lines to the server `admin` talks to (passwords s3cret and d3ploy). */
async function applyAcl(admin: Redis): Promise<void> {
  for (const line of aclLines()) {
    const args = line
      .split(/\s+/)
      .slice(2)
      .map((a) => (a === '>CHANGE-ME' ? '>s3cret' : a === '>CHANGE-ME-DEPLOY' ? '>d3ploy' : a));
    await admin.call('ACL', 'SETUSER', ...args);
  }
}

/** Submits a job and runs it to success through queue and executor clients `connect` makes. */
async function submitAndRun(
  connect: () => Redis | Cluster | string,
  options: { durability?: 'replicated'; shards?: number } = {},
) {
  const queue = new Queue('acl-run', { connection: connect(), ...options });
  const worker = new Worker('acl-run', { t: async () => 'ran' }, { connection: connect(), ...options });
  try {
    const job = await queue.submit({ task: 't', args: 'x' });
    await new Promise<void>((resolve, reject) => {
      worker.on('completed', (j) => j.id === job.id && resolve());
      worker.on('error', reject);
    });
    expect(await queue.getJob(job.id)).toMatchObject({ state: 'success', result: 'ran' });
  } finally {
    await worker.close();
    await queue.close();
  }
}

const ROOT = new URL('../../', import.meta.url);
const read = (dir: string) =>
  readdirSync(new URL(dir, ROOT), { recursive: true })
    .map(String)
    .filter((f) => /\.(lua|ts)$/.test(f))
    .map((f) => readFileSync(new URL(`${dir}/${f}`, ROOT), 'utf8'));

/** The commands the scripts call: `redis.call('X', ...)`, `redis.pcall(...)` and the scripts' `call(...)` alias. */
function scriptCommands(): Set<string> {
  const out = new Set<string>();
  for (const text of read('lua')) {
    for (const m of text.matchAll(/\b(?:redis\.)?p?call\(\s*'([A-Za-z]+)'/g)) out.add(m[1].toLowerCase());
  }
  return out;
}

/** Method names of JavaScript objects the stores call that are also Redis command names (Map#get, Array#sort...). */
const NOT_COMMANDS = new Set(['keys', 'sort', 'copy']);

/** The commands the stores send: ioredis methods named as Redis commands, and `call('X', 'SUB')`. */
function storeCommands(): Set<string> {
  const { list } = createRequire(import.meta.url)('@ioredis/commands') as { list: string[] };
  const commands = new Set(list);
  const out = new Set<string>();
  for (const text of read('src/redis')) {
    for (const m of text.matchAll(/\.([a-z]+)\(/g)) if (commands.has(m[1]) && !NOT_COMMANDS.has(m[1])) out.add(m[1]);
    for (const m of text.matchAll(/\.call\(\s*'([A-Za-z]+)'(?:\s*,\s*'([A-Za-z]+)')?/g)) {
      const c = m[1].toLowerCase();
      out.add(c === 'function' || c === 'cluster' ? `${c}|${m[2].toLowerCase()}` : c);
    }
  }
  // (the bench's own connections, in its own namespace, are an administrator's; the slowlog is left out on purpose)
  for (const c of ['scan', 'slowlog', 'function|load', 'cluster']) out.delete(c);
  return out;
}

describe('the ACL lines', () => {
  it('are those of docs/operations.md', () => {
    const doc = readFileSync(new URL('docs/operations.md', ROOT), 'utf8');
    expect(doc.split('\n').filter((l) => l.startsWith('ACL SETUSER '))).toEqual(aclLines());
  });

  it("hold every command of the scripts and the stores in the runtime user's list", () => {
    const runtime = new Set(commandsOf(RUNTIME_ROLES));
    expect([...scriptCommands()].filter((c) => !runtime.has(c))).toEqual([]);
    expect([...storeCommands()].filter((c) => !runtime.has(c))).toEqual([]);
    // (the deploy user loads the library and runs the migration steps: the scripts' commands, and SCAN;
    // no subscriptions, no WAIT, no blocking pops)
    const deploy = commandsOf(['deploy']);
    expect(deploy).toContain('function|load');
    expect(deploy).toContain('scan');
    for (const c of ['subscribe', 'bzpopmin', 'wait']) expect(deploy).not.toContain(c);
  });
});

describe('the CLI as the runtime user', () => {
  let server: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
    await applyAcl(admin);
    await loadLibrary(admin);
    await admin.call('ACL', 'LOG', 'RESET');
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.destroy();
  });

  it('submits, lists, shows and cancels jobs, with nothing refused', async () => {
    const q = ['--redis', `redis://rota:s3cret@127.0.0.1:${server.port}`, '--queue', 'acl-cli'];
    const sub = await rota([...q, 'submit', 'mail', '--json']);
    expect(sub.code, sub.stderr).toBe(0);
    const id = JSON.parse(sub.stdout).id as string;
    for (const args of [
      ['jobs', '--state', 'waiting'],
      ['job', id],
      ['stats'],
      ['groups'],
      ['cancel', id],
      ['periodic', 'list'],
    ]) {
      const r = await rota([...q, ...args]);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
    }
    expect(await admin.call('ACL', 'LOG')).toEqual([]);
  });
});

describe('the runtime user with replicated durability', () => {
  it('submits and runs a job that waits for its replica (WAIT), with nothing refused', async () => {
    const primary = await RedisServer.start();
    const replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    const admin = new Redis(primary.url);
    try {
      const replicaAdmin = new Redis(replica.url);
      await eventually(async () => (await replicaAdmin.info('replication')).includes('master_link_status:up'), 20_000);
      replicaAdmin.disconnect();
      await applyAcl(admin);
      await loadLibrary(admin);
      await admin.call('ACL', 'LOG', 'RESET');
      await submitAndRun(() => `redis://rota:s3cret@127.0.0.1:${primary.port}`, { durability: 'replicated' });
      expect(await admin.call('ACL', 'LOG')).toEqual([]);
    } finally {
      admin.disconnect();
      await replica.destroy();
      await primary.destroy();
    }
  });
});

describe('the runtime user on a Redis Cluster', () => {
  it('submits and runs a job on a sharded queue, with nothing refused on any node', async () => {
    const cluster = await startCluster(3);
    const admins = cluster.nodes.map((n) => new Redis(n.port, '127.0.0.1'));
    try {
      for (const a of admins) {
        await applyAcl(a);
        await loadLibrary(a);
        await a.call('ACL', 'LOG', 'RESET');
      }
      const connect = () => new Cluster(cluster.startupNodes, { redisOptions: { username: 'rota', password: 's3cret' } });
      await submitAndRun(connect, { shards: 3 });
      for (const a of admins) expect(JSON.stringify(await a.call('ACL', 'LOG'))).toBe('[]');
    } finally {
      for (const a of admins) a.disconnect();
      await cluster.destroy();
    }
  }, 60_000);
});
