/**
 * The ACL of docs/operations.md, its two lines applied as written to a fresh server: the deploy
 * user loads the library; a queue, an executor, a scheduler and the periodic store work through
 * the runtime user, and Redis logs no refusal; the runtime user cannot replace the library, and a
 * library replaced by an administrator is refused by every client. Tenants: a user confined to
 * one queue's keys cannot reach another's.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibraryMismatchError, PeriodicTasks, Queue, Scheduler, ScriptLoadError, Worker } from '../../src/index.js';
import { loadLibrary, rotaLibrary } from '../../src/redis/library.js';
import { rota } from '../helpers/cli.js';
import { RedisServer } from '../helpers/redis-server.js';

/** The `ACL SETUSER <user> ...` line of docs/operations.md, split into arguments after SETUSER. */
function documentedAcl(user: 'rota' | 'rota-deploy'): string[] {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const line = doc.split('\n').find((l) => l.startsWith(`ACL SETUSER ${user} `));
  if (!line) throw new Error(`docs/operations.md has no ACL SETUSER ${user} line`);
  return line
    .slice('ACL SETUSER '.length)
    .trim()
    .split(/\s+/)
    .map((a) => (a === '>CHANGE-ME' ? '>s3cret' : a === '>CHANGE-ME-DEPLOY' ? '>d3ploy' : a));
}

/** The runtime line with the keys and channels of queue `queue` only, as the docs' Tenants paragraph says. */
function tenantAcl(user: string, queue: string): string[] {
  const confined = documentedAcl('rota').flatMap((a) => {
    if (a === '~{rota:*') return [`~{rota:${queue}}*`, `~{rota:${queue}:*`];
    if (a === '&{rota:*') return [`&{rota:${queue}}*`, `&{rota:${queue}:*`];
    return [a];
  });
  return [user, ...confined.slice(1)];
}

/** The library's code with `extra` run first in its submit function: a trojan under its name. */
function trojan(extra: string): string {
  const lib = rotaLibrary();
  const fn = lib.functions.get('submit')!;
  const at = lib.code.indexOf(`redis.register_function('${fn}', function(KEYS, ARGV)\nbeginCall()\n`);
  if (at < 0) throw new Error('submit function not found in the library code');
  const head = `redis.register_function('${fn}', function(KEYS, ARGV)\nbeginCall()\n`;
  return `${lib.code.slice(0, at)}${head}${extra}\n${lib.code.slice(at + head.length)}`;
}

let server: RedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
  await admin.call('ACL', 'SETUSER', ...documentedAcl('rota-deploy'));
  await admin.call('ACL', 'SETUSER', ...documentedAcl('rota'));
  const deploy = new Redis(`redis://rota-deploy:d3ploy@127.0.0.1:${server.port}`);
  try {
    expect(await loadLibrary(deploy)).toBe(true);
  } finally {
    deploy.disconnect();
  }
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

describe('the library', () => {
  it('cannot be replaced, deleted or flushed by the runtime user', async () => {
    const runtime = new Redis(`redis://rota:s3cret@127.0.0.1:${server.port}`);
    try {
      const code = trojan("redis.call('SET', '{rota:acl}:pwned', '1')");
      await expect(runtime.call('FUNCTION', 'LOAD', 'REPLACE', code)).rejects.toThrow(/NOPERM/);
      await expect(runtime.call('FUNCTION', 'DELETE', rotaLibrary().name)).rejects.toThrow(/NOPERM/);
      await expect(runtime.call('FUNCTION', 'FLUSH')).rejects.toThrow(/NOPERM/);
      const dump = (await admin.callBuffer('FUNCTION', 'DUMP')) as Buffer;
      await expect(runtime.call('FUNCTION', 'RESTORE', dump, 'REPLACE')).rejects.toThrow(/NOPERM/);
      const listed = (await admin.call('FUNCTION', 'LIST', 'LIBRARYNAME', rotaLibrary().name, 'WITHCODE')) as unknown[][];
      expect(listed[0][listed[0].indexOf('library_code') + 1]).toBe(rotaLibrary().code);
    } finally {
      runtime.disconnect();
      await admin.call('ACL', 'LOG', 'RESET');
    }
  });

  it('replaced by an administrator is refused by a new client before any call, and `rota migrate` (replace) restores it', async () => {
    const server = await RedisServer.start();
    const admin = new Redis(server.url);
    try {
      await admin.call('FUNCTION', 'LOAD', trojan("redis.call('SET', '{rota:swap}:pwned', '1')"));
      const victim = new Queue('swap', { connection: server.url });
      try {
        const err = await victim.submit({ task: 't' }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(LibraryMismatchError);
        expect((err as Error).message).toMatch(/holds other code than this Rota's/);
      } finally {
        await victim.close();
      }
      expect(await admin.exists('{rota:swap}:pwned')).toBe(0);
      // a load without replace refuses too; the deploy's replaces
      await expect(loadLibrary(admin)).rejects.toBeInstanceOf(LibraryMismatchError);
      expect(await loadLibrary(admin, { replace: true })).toBe(true);
      const queue = new Queue('swap', { connection: server.url });
      try {
        expect((await queue.submit({ task: 't' })).state).toBe('waiting');
      } finally {
        await queue.close();
      }
      expect(await admin.exists('{rota:swap}:pwned')).toBe(0);
    } finally {
      admin.disconnect();
      await server.destroy();
    }
  });
});

describe('a runtime user meeting a server without the library', () => {
  it('gets an executor that says to run `rota migrate`, tries again, and starts once the deploy user loaded it', async () => {
    const server = await RedisServer.start();
    const admin = new Redis(server.url);
    try {
      await admin.call('ACL', 'SETUSER', ...documentedAcl('rota-deploy'));
      await admin.call('ACL', 'SETUSER', ...documentedAcl('rota'));
      const connection = `redis://rota:s3cret@127.0.0.1:${server.port}`;
      const producer = new Queue('noload', { connection });
      const refused = await producer.submit({ task: 'mail' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ScriptLoadError);
      expect((refused as Error).message).toMatch(/rota migrate/);
      expect(await admin.call('FUNCTION', 'LIST')).toEqual([]);
      const errors: Error[] = [];
      const ran: string[] = [];
      let firstError = () => {};
      const refusedStart = new Promise<void>((resolve) => {
        firstError = resolve;
      });
      const worker = new Worker('noload', { mail: ({ args }) => void ran.push(String(args)) }, { connection });
      worker.on('error', (e) => {
        errors.push(e);
        firstError();
      });
      try {
        await refusedStart;
        expect(errors[0].name).toBe('ScriptLoadError');
        expect(errors[0].message).toMatch(/FUNCTION LOAD was refused: NOPERM/);
        expect(errors[0].message).toMatch(/rota migrate/);
        // the deploy user loads it; the executor starts by itself and runs a job
        const done = new Promise<void>((resolve) => worker.on('completed', () => resolve()));
        const deploy = new Redis(`redis://rota-deploy:d3ploy@127.0.0.1:${server.port}`);
        await loadLibrary(deploy);
        deploy.disconnect();
        const queue = new Queue('noload', { connection });
        await queue.submit({ task: 'mail', args: 'waited' });
        await done;
        expect(ran).toEqual(['waited']);
        expect((await queue.workers()).map((w) => w.id)).toEqual([worker.id]);
        await queue.close();
      } finally {
        await worker.close();
        await producer.close();
      }
    } finally {
      admin.disconnect();
      await server.destroy();
    }
  }, 60_000);
});

describe('a tenant confined to one queue', () => {
  it("works on its queue and is refused on another's, scripts included", async () => {
    await admin.call('ACL', 'SETUSER', ...tenantAcl('tenant-a', 'qa'));
    const mine = new Queue('qa', { connection: `redis://tenant-a:s3cret@127.0.0.1:${server.port}` });
    const theirs = new Queue('qb', { connection: `redis://tenant-a:s3cret@127.0.0.1:${server.port}` });
    const owner = new Queue('qb', { connection: server.url });
    try {
      await owner.submit({ task: 't', id: 'secret-job', args: 'b only' });
      expect((await mine.submit({ task: 't' })).state).toBe('waiting');
      expect((await mine.counts()).waiting).toBe(1);
      await expect(theirs.submit({ task: 't' })).rejects.toThrow(/NOPERM/);
      await expect(theirs.getJob('secret-job')).rejects.toThrow(/NOPERM/);
      expect((await owner.counts()).waiting).toBe(1);
    } finally {
      await mine.close();
      await theirs.close();
      await owner.close();
      await admin.call('ACL', 'LOG', 'RESET');
    }
  });
});

describe('rota migrate', () => {
  it('loads the library as the deploy user, says so, and replaces a library of its name holding other code', async () => {
    const server = await RedisServer.start();
    const admin = new Redis(server.url);
    try {
      await admin.call('ACL', 'SETUSER', ...documentedAcl('rota-deploy'));
      const deploy = ['--redis', `redis://rota-deploy:d3ploy@127.0.0.1:${server.port}`, 'migrate'];
      const name = rotaLibrary().name;
      expect(await rota(deploy)).toMatchObject({ code: 0, stdout: `function library ${name} loaded\n` });
      expect(await rota([...deploy, '--json'])).toMatchObject({ code: 0 });
      // (and reads the queue's schema as the deploy user: nothing recorded, nothing to migrate)
      expect(JSON.parse((await rota([...deploy, '--json'])).stdout)).toEqual({
        library: name,
        changed: false,
        queue: 'default',
        dryRun: false,
        shards: [{ shard: 0, schema: null, after: null, resumed: null, steps: [] }],
      });
      await admin.call('FUNCTION', 'LOAD', 'REPLACE', trojan("redis.call('SET', '{rota:m}:pwned', '1')"));
      expect(await rota(deploy)).toMatchObject({ code: 0, stdout: `function library ${name} loaded\n` });
      const listed = (await admin.call('FUNCTION', 'LIST', 'LIBRARYNAME', name, 'WITHCODE')) as unknown[][];
      expect(listed[0][listed[0].indexOf('library_code') + 1]).toBe(rotaLibrary().code);
      expect(await admin.call('ACL', 'LOG')).toEqual([]);
    } finally {
      admin.disconnect();
      await server.destroy();
    }
  }, 60_000);
});
