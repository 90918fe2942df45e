/**
 * A client Rota opens on a database the server does not have (`redis://host/99` with the default
 * 16 databases) runs nothing: ioredis would run the commands on database 0 once its SELECT is
 * refused. Its commands fail with a ConnectionError (reason DB) and nothing is written anywhere.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectionError, Queue, ValidationError, Worker } from '../../src/index.js';
import { RedisServer } from '../helpers/redis-server.js';

let server: RedisServer;
let admin: Redis;
beforeAll(async () => {
  server = await RedisServer.start();
  admin = new Redis(server.url);
});
afterAll(async () => {
  admin.disconnect();
  await server.destroy();
});

/** Keys in every database of the server (INFO keyspace lists the databases that hold any). */
async function keyspace(): Promise<string> {
  return (await admin.info('keyspace')).replace(/^#.*\r?\n/, '').trim();
}

describe('a database the server does not have', () => {
  it('fails a submit with a ConnectionError (reason DB) naming it, and writes nothing to database 0', async () => {
    for (const connection of [`${server.url}/99`, { port: server.port, db: 16 }]) {
      const q = new Queue('db', { connection });
      const err = await q.submit({ task: 't' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectionError);
      expect((err as ConnectionError).reason).toBe('DB');
      expect((err as Error).message).toMatch(/:\d+\/(99|16): the server has no database of that number/);
      await q.close();
    }
    expect(await keyspace()).toBe('');
  });

  it('keeps an executor from registering or taking anything in database 0: it reports the refusal', async () => {
    const w = new Worker('db', { t: () => 1 }, { connection: `${server.url}/99`, autorun: false });
    const refused = new Promise<Error>((resolve) => w.once('error', resolve));
    // (its start is tried again until it is closed: it does not resolve)
    void w.run();
    const err = await refused;
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).reason).toBe('DB');
    await w.close({ timeout: 0 });
    expect(await keyspace()).toBe('');
  });

  it('refuses a database that is no whole number before opening anything, and uses a database the server has', async () => {
    for (const connection of [`${server.url}/abc`, `${server.url}/-1`, `${server.url}/1.5`, { port: server.port, db: -1 }]) {
      expect(() => new Queue('db', { connection })).toThrow(ValidationError);
    }
    const q = new Queue('db', { connection: `${server.url}/3` });
    await q.submit({ task: 't' });
    await q.close();
    expect(await keyspace()).toMatch(/^db3:keys=\d+/);
  });
});
