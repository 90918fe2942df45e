/**
 * The Redis page, against a server with a password: memory and its peak, clients, ops/s,
 * persistence, replication role, the slowlog's newest entries (escaped, arguments cut short,
 * none of a command that may carry a secret) and Rota's library loaded. No page shows the
 * password, not even when it went through the slowlog.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardServer, serveDashboard } from '../../src/dashboard/index.js';
import { Worker } from '../../src/executor/worker.js';
import { Queue } from '../../src/queue/queue.js';
import { rotaLibrary } from '../../src/redis/library.js';
import { parseSlowlog } from '../../src/redis/server-store.js';
import { SCHEMA_VERSION } from '../../src/redis/wire.js';
import { dashboardClient, textOf } from '../helpers/dashboard.js';
import { type RunningRedis, startRedis } from '../helpers/redis-server.js';
import { eventually, uniqueQueue } from '../helpers/setup.js';

const SECRET = 'pw-Zq7-never-shown-4411';
const HOSTILE_KEY = `<script>alert("k")</script>`;

/** The runtime user's `ACL SETUSER` line of docs/operations.md, split into arguments after SETUSER. */
function runtimeAcl(): string[] {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const line = doc.split('\n').find((l) => l.startsWith('ACL SETUSER rota '))!;
  return line
    .slice('ACL SETUSER '.length)
    .trim()
    .split(/\s+/)
    .map((a) => (a === '>CHANGE-ME' ? '>runtime-pw' : a));
}

describe('the Redis page', () => {
  const name = uniqueQueue('redis-page');
  let server: RunningRedis;
  let url: string;
  let admin: Redis;
  let queue: Queue;
  let served: DashboardServer;
  const { get } = dashboardClient(() => served.url);

  beforeAll(async () => {
    server = await startRedis({ args: ['--requirepass', SECRET], appendfsync: 'everysec' });
    url = server.url.replace('redis://', `redis://:${SECRET}@`);
    admin = new Redis(url);
    queue = new Queue(name, { connection: url });
    const worker = new Worker(name, { ok: async () => 'ok' }, { connection: url });
    const job = await queue.submit({ task: 'ok', group: 'g' });
    await eventually(async () => (await queue.getJob(job.id))?.state === 'success');
    await worker.close();
    // Every command goes to the slowlog, those with the password among them.
    await admin.config('SET', 'slowlog-log-slower-than', '0');
    for (let i = 0; i < 15; i++) await admin.ping();
    await admin.call('AUTH', SECRET);
    await admin.config('SET', 'requirepass', SECRET);
    await admin.set(HOSTILE_KEY, 'x'.repeat(500));
    // (and no more: the dashboard's own commands would push these out of the newest ten)
    await admin.config('SET', 'slowlog-log-slower-than', '-1');
    served = await serveDashboard({ connection: url, queues: [name], port: 0 });
  }, 30_000);

  afterAll(async () => {
    await served?.close();
    await queue?.close();
    admin?.disconnect();
    await server?.destroy();
  });

  it('shows memory, clients, ops/s, persistence, replication and the library loaded', async () => {
    const r = await get('/redis');
    expect(r.status).toBe(200);
    const text = textOf(r.body);
    expect(text).toMatch(/memory used [\d.]+ (KiB|MiB)/);
    expect(text).toMatch(/memory peak [\d.]+ (KiB|MiB)/);
    expect(text).toMatch(/clients \d+/);
    expect(text).toMatch(/ops\/s \d+/);
    expect(text).toMatch(/RDB last status ok/);
    expect(text).toMatch(/AOF on/);
    expect(text).toMatch(/AOF last write ok/);
    expect(text).toMatch(/role master replicas 0/);
    expect(text).toContain(`${rotaLibrary().name} ${SCHEMA_VERSION} `);
    expect(text).toContain("this dashboard's");
    expect(r.body).toMatch(/<a href="\/redis" class="current">Redis<\/a>/);
  });

  it('lists the newest slow commands, escaped and cut short', async () => {
    const r = await get('/redis');
    expect(r.body).not.toContain('<script>alert(');
    expect(r.body).toContain('set &lt;script&gt;alert(&quot;k&quot;)&lt;/script&gt; xxxxx');
    expect(r.body).not.toContain('x'.repeat(61));
    expect((r.body.match(/<tr><td><time/g) ?? []).length).toBe(10);
    // (the command that carried the password shows by name alone; its arguments counted)
    expect(r.body).toContain('<td class="mono">config <small>… 3 more</small></td>');
    expect(r.body).toContain('<td class="mono">AUTH <small>… 1 more</small></td>');
  });

  it('shows scripts and function calls by name alone: their arguments may hold job args or secrets', () => {
    const names = ['EVAL', 'eval_ro', 'EVALSHA', 'evalsha_ro', 'FCALL', 'fcall_ro', 'SCRIPT', 'FUNCTION', 'AUTH'];
    const entries = names.map((n, i) => [i, 1_700_000_000, 5, [n, 'rota_x', '0', SECRET, 'more']]);
    const parsed = parseSlowlog(entries);
    expect(parsed.map((e) => e.command)).toEqual(names.map((n) => [n]));
    expect(parsed.every((e) => e.more === 4)).toBe(true);
    expect(JSON.stringify(parsed)).not.toContain(SECRET);
    // (another command keeps its first arguments)
    expect(parseSlowlog([[1, 1, 1, ['HGET', 'k', 'f']]])[0].command).toEqual(['HGET', 'k', 'f']);
  });

  it('shows the password on no page', async () => {
    for (const path of ['/', '/groups', '/jobs', '/jobs?state=success', '/executors', '/periodic', '/redis', '/api/tick']) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.body, path).not.toContain(SECRET);
    }
  });
});

describe('the dashboard as the documented runtime user', () => {
  const name = uniqueQueue('acl-pages');
  let server: RunningRedis;
  let admin: Redis;
  let queue: Queue;
  let served: DashboardServer;
  let waitingId = '';
  const { get } = dashboardClient(() => served.url);

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
    await admin.call('ACL', 'SETUSER', ...runtimeAcl());
    // (the default user loads the library; the runtime user may not)
    const loader = new Queue(name, { connection: server.url });
    const worker = new Worker(
      name,
      {
        bad: async () => {
          throw new Error('no');
        },
      },
      { connection: server.url },
    );
    const failed = await loader.submit({ task: 'bad', group: 'only-failed', maxRetries: 0 });
    await eventually(async () => (await loader.getJob(failed.id))?.state === 'failed');
    await worker.close();
    await loader.close();
    await admin.call('ACL', 'LOG', 'RESET');
    const url = server.url.replace('redis://', 'redis://rota:runtime-pw@');
    queue = new Queue(name, { connection: url });
    await queue.pauseGroup('held');
    waitingId = (await queue.submit({ task: 'bad', group: 'held' })).id;
    served = await serveDashboard({ connection: url, queues: [name], port: 0 });
  }, 30_000);

  afterAll(async () => {
    await served?.close();
    await queue?.close();
    admin?.disconnect();
    await server?.destroy();
  });

  it('serves the new pages with the rights the docs give it', async () => {
    const groups = await get('/groups');
    expect(groups.status, groups.body.slice(-300)).toBe(200);
    expect(groups.body).toContain('data-group="only-failed"');
    const job = await get(`/jobs/${waitingId}`);
    expect(textOf(job.body)).toMatch(/place 1 of 1 .*group state paused/);
    expect((await get('/executors')).status).toBe(200);
    const redis = textOf((await get('/redis')).body);
    expect(redis).toMatch(/memory used [\d.]+ (KiB|MiB)/);
    expect(redis).toContain(`${rotaLibrary().name} ${SCHEMA_VERSION} `);
    expect(redis).toMatch(/Slowlog newest 10 not readable: NOPERM/);
    // (the one command refused: the slowlog, which the runtime user is not given)
    const log = (await admin.call('ACL', 'LOG')) as unknown[][];
    const refused = log.map((e) => String(e[e.indexOf('object') + 1]));
    expect(new Set(refused)).toEqual(new Set(['slowlog|get']));
  });
});
