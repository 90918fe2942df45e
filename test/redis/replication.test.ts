/**
 * `durability: 'replicated'` on a primary with one replica: a submit and an executor's finish
 * resolve once the replica has them; a write that asks for more replicas than acknowledge it is
 * refused with a ReplicationError naming both counts (the submit may be sent again, the outcome is).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplicationError, ValidationError } from '../../src/index.js';
import { queueKeys } from '../../src/redis/keys.js';
import { ScriptRunner } from '../../src/redis/script-runner.js';
import { RedisServer } from '../helpers/redis-server.js';
import { closeAll, eventually, openQueue, openWorker, uniqueQueue, until } from '../helpers/setup.js';

let primary: RedisServer;
let replica: RedisServer;

beforeAll(async () => {
  primary = await RedisServer.start();
  replica = await RedisServer.start({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  // (until the replica has synced, WAIT counts none)
  const c = new Redis(primary.url);
  try {
    await eventually(async () => /connected_slaves:1[\s\S]*state=online/.test(await c.info('replication')), 20_000);
  } finally {
    c.disconnect();
  }
}, 30_000);

afterAll(async () => {
  await closeAll();
  await replica?.destroy();
  await primary?.destroy();
});

describe("durability 'replicated'", () => {
  it('acknowledges submits and finishes once the replica has them', async () => {
    const name = uniqueQueue('repl');
    const q = openQueue(name, { connection: primary.url, durability: 'replicated' });
    const w = openWorker(name, { t: () => 'ok' }, { connection: primary.url, durability: 'replicated' });
    let done = 0;
    w.on('completed', () => done++);
    await q.submitBulk([{ task: 't' }, { task: 't' }]);
    await until(w, 'completed', () => done === 2);
    expect((await q.counts()).success).toBe(2);
  });

  it('refuses a write that fewer replicas than asked for acknowledged, naming both counts', async () => {
    const name = uniqueQueue('repl');
    const q = openQueue(name, { connection: primary.url, durability: 'replicated', replicaAcks: 2, replicaTimeoutMs: 100 });
    const err = await q.submit({ task: 't' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReplicationError);
    expect(err).toMatchObject({ wanted: 2, acked: 1 });
    expect((err as Error).message).toMatch(/1 of the 2 replicas/);
    expect(() => openQueue(name, { connection: primary.url, durability: 'replicated', replicaAcks: 0 })).toThrow(ValidationError);
  });

  it("does not take a WAIT on a connection made again after the write for the write's acknowledgement", async () => {
    const k = queueKeys(uniqueQueue('repl'));
    // (no ready check: its INFO happens to leave a new connection waiting for the primary's offset
    // then; a new connection to a new primary after a failover has no such luck)
    const client = new Redis(primary.url, { enableReadyCheck: false });
    const runner = new ScriptRunner(client, 'repl', k.meta, k.meta, { replicaTimeoutMs: 500 });
    const pid = replica.pid as number;
    try {
      await client.set(`${k.prefix}probe`, '1');
      await runner.replicated(); // (the same connection: the replica has it)
      // The replica stops reading, the write reaches the primary only, and the connection closes
      // before its WAIT: on the new connection, WAIT would count the stopped replica at once.
      process.kill(pid, 'SIGSTOP');
      await client.set(`${k.prefix}probe`, '2');
      // (its socket destroyed: the WAIT waits in ioredis's offline queue, and goes on the new connection)
      (client as unknown as { stream: { destroy(): void } }).stream.destroy();
      const err = await runner.replicated().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ReplicationError);
      expect(err).toMatchObject({ reconnected: true });
      expect((err as Error).message).toMatch(/connection closed between the write and its WAIT/);
    } finally {
      process.kill(pid, 'SIGCONT');
      client.disconnect();
    }
  });
});
