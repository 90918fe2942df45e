/**
 * A client Rota opens refuses a connection string that is not a Redis URL at once, and fails the
 * commands it cannot send with a ConnectionError naming the URL (password masked) and the cause:
 * after three connection attempts before it ever reached Redis, after `maxRetriesPerRequest`
 * attempts once it had.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionError, PeriodicTasks, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { FIRST_CONTACT_RETRIES } from '../../src/redis/connection.js';
import { freePort, RedisServer } from '../helpers/redis-server.js';
import { closeAll, track } from '../helpers/setup.js';

afterEach(closeAll);

async function failure(p: Promise<unknown>): Promise<ConnectionError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectionError);
  return err as ConnectionError;
}

describe('a connection string that is not a Redis URL', () => {
  it('is refused when the client is made, as a ValidationError naming it, its password masked', () => {
    const make = [
      (c: string) => new Queue('q', { connection: c }),
      (c: string) => new PeriodicTasks('q', { connection: c }),
      (c: string) => new Scheduler('q', { connection: c }),
      (c: string) => new Worker('q', {}, { connection: c }),
    ];
    for (const build of make) {
      expect(() => build('notaurl')).toThrow(/connection: "notaurl" is not a URL/);
      const err = (() => {
        try {
          build('http://user:secret@x');
        } catch (e) {
          return e;
        }
      })() as ValidationError;
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.field).toBe('connection');
      expect(err.message).toContain('"http://user:***@x" is not a Redis URL');
      expect(err.message).not.toContain('secret');
    }
  });
});

describe('a Redis that cannot be reached', () => {
  it('fails the first commands with a ConnectionError naming the masked URL and the cause', async () => {
    const url = `redis://:secret@127.0.0.1:${await freePort()}`;
    const queue = track(new Queue('q', { connection: url }));
    const tasks = track(new PeriodicTasks('q', { connection: url }));
    for (const call of [() => queue.submit({ task: 't' }), () => queue.stats(), () => queue.groups(), () => tasks.list()]) {
      const err = await failure(call());
      expect(err.reason).toBe('ECONNREFUSED');
      expect(err.target).toMatch(/^redis:\/\/:\*\*\*@127\.0\.0\.1:\d+$/);
      expect(err.message).toMatch(/cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+: nothing listens there/);
      expect(err.message).not.toContain('secret');
    }
  });

  it(`gives up on a command sent before the first contact after ${FIRST_CONTACT_RETRIES + 1} connection attempts`, async () => {
    // A server that accepts each connection and closes it at once, counting them.
    const sockets: Socket[] = [];
    const server: Server = createServer((s) => {
      sockets.push(s);
      s.destroy();
    });
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    try {
      const queue = track(new Queue('q', { connection: `redis://127.0.0.1:${port}` }));
      const err = await failure(queue.stats());
      expect(err.target).toBe(`redis://127.0.0.1:${port}`);
      expect(sockets.length).toBe(FIRST_CONTACT_RETRIES + 1);
    } finally {
      server.close();
    }
  });

  it('says when what answers does not speak the Redis protocol', async () => {
    const server = createServer((s) => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    try {
      const queue = track(new Queue('q', { connection: `redis://127.0.0.1:${port}` }));
      const err = await failure(queue.stats());
      expect(err.reason).toBe('PROTOCOL');
      expect(err.message).toContain(
        `cannot reach Redis at redis://127.0.0.1:${port}: what answers there does not speak the Redis protocol`,
      );
    } finally {
      server.close();
    }
  });

  it('once Redis was reached, fails a command after maxRetriesPerRequest attempts through an outage, as a ConnectionError', async () => {
    const server = await RedisServer.start();
    try {
      const url = `redis://127.0.0.1:${server.port}`;
      const queue = track(new Queue('q', { connection: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 4 } }));
      expect((await queue.stats()).counts.waiting).toBe(0);
      await server.stop();
      const err = await failure(queue.stats());
      expect(err.message).toContain(`cannot reach Redis at ${url}`);
      expect(err.reason).toBe('ECONNREFUSED');
    } finally {
      await server.destroy();
    }
  }, 30_000);
});
