/**
 * Refused credentials: a Worker backs off instead of opening connection after connection, and a
 * Scheduler whose start() rejected leaves no connection behind.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, Queue, Scheduler, Worker } from '../../src/index.js';
import { AUTH_RETRY_MS } from '../../src/redis/connection.js';
import { RedisServer } from '../helpers/redis-server.js';

let server: RedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await RedisServer.start({ args: ['--requirepass', 'secret'] });
  admin = new Redis(server.port, '127.0.0.1', { password: 'secret' });
});

afterAll(async () => {
  admin.disconnect();
  await server.destroy();
});

/** Connections the server has accepted so far. */
async function connectionsReceived(): Promise<number> {
  const info = await admin.info('stats');
  return Number(/total_connections_received:(\d+)/.exec(info)![1]);
}

/** Connections open now, other than the admin's own. */
async function connectedClients(): Promise<number> {
  const info = await admin.info('clients');
  return Number(/connected_clients:(\d+)/.exec(info)![1]) - 1;
}

const wrongUrl = () => `redis://:wrong@127.0.0.1:${server.port}`;

describe('with a wrong password', () => {
  it('a Worker retries its connections every few seconds, not in a storm', async () => {
    const before = await connectionsReceived();
    const errors: Error[] = [];
    const worker = new Worker('auth', { noop: () => undefined }, { connection: wrongUrl() });
    worker.on('error', (e) => errors.push(e));
    // Long enough for an unbounded reconnect loop to open hundreds of connections, and for the
    // backoff (AUTH_RETRY_MS) to allow at most one more attempt per connection.
    expect(AUTH_RETRY_MS).toBeGreaterThan(3000);
    await new Promise((r) => setTimeout(r, 6000));
    const opened = (await connectionsReceived()) - before;
    await worker.close({ timeout: 100 });
    // three connections (commands, blocking wait, subscriber), each tried at most twice so far
    expect(opened).toBeGreaterThan(0);
    expect(opened).toBeLessThanOrEqual(6);
    expect(errors.some((e) => /WRONGPASS|NOAUTH|invalid/i.test(e.message))).toBe(true);
  }, 20_000);

  it('a Scheduler whose start() rejected keeps no connection open', async () => {
    const scheduler = new Scheduler('auth', { connection: wrongUrl() });
    scheduler.on('error', () => {});
    await expect(scheduler.start()).rejects.toThrow(/WRONGPASS|NOAUTH|invalid/i);
    const after = await connectionsReceived();
    await new Promise((r) => setTimeout(r, 1500));
    expect(await connectionsReceived()).toBe(after);
    expect(await connectedClients()).toBe(0);
  }, 20_000);
});

describe('a queue whose first call Redis refuses', () => {
  it('rejects with a ConnectionError naming where and why, without the password', async () => {
    const queue = new Queue('auth', { connection: wrongUrl() });
    try {
      const err = await queue.submit({ task: 't' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectionError);
      expect((err as ConnectionError).reason).toBe('WRONGPASS');
      expect((err as ConnectionError).message).toContain(`redis://:***@127.0.0.1:${server.port}`);
      expect((err as ConnectionError).message).not.toContain('wrong');
    } finally {
      await queue.close();
    }
  });
});
