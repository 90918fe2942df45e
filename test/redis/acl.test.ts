/**
 * The least-privilege ACL of docs/operations.md, applied as written to a fresh server: a queue,
 * an executor, a scheduler and the periodic store work through a user limited to it, and Redis
 * logs no refusal.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, Scheduler, Worker } from '../../src/index.js';
import { loadLibrary } from '../../src/redis/library.js';
import { RedisServer } from '../helpers/redis-server.js';

/** The `ACL SETUSER ...` line of docs/operations.md, split into arguments after SETUSER. */
function documentedAcl(): string[] {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const line = doc.split('\n').find((l) => l.startsWith('ACL SETUSER '));
  if (!line) throw new Error('docs/operations.md has no ACL SETUSER line');
  return line
    .slice('ACL SETUSER '.length)
    .trim()
    .split(/\s+/)
    .map((a) => (a === '>CHANGE-ME' ? '>s3cret' : a));
}

let server: RedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
  await admin.call('ACL', 'SETUSER', ...documentedAcl());
});

afterAll(async () => {
  admin.disconnect();
  await server.destroy();
});

describe('the documented least-privilege ACL', () => {
  it('lets a queue, an executor, a scheduler and the periodic store do their work, with nothing refused', async () => {
    const connection = `redis://rota:s3cret@127.0.0.1:${server.port}`;
    const queue = new Queue('acl', { connection });
    const tasks = new PeriodicTasks('acl', { connection });
    const scheduler = new Scheduler('acl', { connection });
    const ran: string[] = [];
    const worker = new Worker(
      'acl',
      {
        mail: ({ args }) => {
          ran.push(String(args));
        },
      },
      { connection, concurrency: 2 },
    );
    const errors: Error[] = [];
    worker.on('error', (e) => errors.push(e));
    scheduler.on('error', (e) => errors.push(e));
    try {
      await scheduler.start();
      const done = new Promise<void>((resolve) => worker.on('completed', () => ran.length === 2 && resolve()));
      await queue.submit({ task: 'mail', group: 'g1', args: 'submitted' });
      await tasks.upsert({ id: 'nightly', task: 'mail', timer: 'daily', args: 'periodic' });
      await tasks.trigger('nightly');
      await done;
      expect(ran.sort()).toEqual(['periodic', 'submitted']);
      expect((await queue.counts()).success).toBe(2);
      await queue.groups();
      await queue.workers();
      expect(await tasks.runs('nightly')).toHaveLength(1);
      expect(errors).toEqual([]);
      expect(await admin.call('ACL', 'LOG')).toEqual([]);
    } finally {
      await worker.close();
      await scheduler.close();
      await tasks.close();
      await queue.close();
    }
  }, 60_000);
});

describe('a user that may not load the function library', () => {
  it('gets an executor that says which permission it lacks, tries again, and starts once an administrator loaded the library', async () => {
    const server = await RedisServer.start();
    const admin = new Redis(server.url);
    try {
      await admin.call('ACL', 'SETUSER', ...documentedAcl().filter((a) => a !== '+function|load'));
      const connection = `redis://rota:s3cret@127.0.0.1:${server.port}`;
      const queue = new Queue('noload', { connection: server.url });
      await admin.call('FUNCTION', 'FLUSH');
      const job = await queue.submit({ task: 'mail', args: 'waited' }).catch(() => null);
      // (the admin's own submit loaded the library: start again from a server without it)
      await admin.call('FUNCTION', 'FLUSH');
      const errors: Error[] = [];
      const ran: string[] = [];
      let firstError = () => {};
      const refused = new Promise<void>((resolve) => {
        firstError = resolve;
      });
      const worker = new Worker('noload', { mail: ({ args }) => void ran.push(String(args)) }, { connection });
      worker.on('error', (e) => {
        errors.push(e);
        firstError();
      });
      try {
        await refused;
        expect(errors[0].name).toBe('ScriptLoadError');
        expect(errors[0].message).toMatch(/FUNCTION LOAD was refused \(NOPERM/);
        expect(errors[0].message).not.toMatch(/7\.0 or newer/);
        // an administrator loads it; the executor starts by itself and runs the waiting job
        const done = new Promise<void>((resolve) => worker.on('completed', () => resolve()));
        await loadLibrary(admin);
        await done;
        expect(ran).toEqual(['waited']);
        expect(job).not.toBeNull();
        expect((await queue.workers()).map((w) => w.id)).toEqual([worker.id]);
      } finally {
        await worker.close();
        await queue.close();
      }
    } finally {
      admin.disconnect();
      await server.destroy();
    }
  }, 60_000);
});
