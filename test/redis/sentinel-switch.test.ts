/**
 * Sentinel clients when a sentinel stops answering. One that hears +switch-master while it is
 * reconnecting: ioredis's failover detector then disconnects the connector in the middle of its
 * connect, and ioredis ends the client for good ("Connection is closed." for every later
 * command); Rota's clients connect again. One that asks a stopped sentinel for the primary:
 * ioredis waits for the answer for ever; Rota's clients ask the next sentinel.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/redis/connection.js';
import { type LocalSentinels, MASTER_NAME, startSentinels } from '../helpers/sentinel.js';
import { eventually } from '../helpers/wait.js';

describe('a Sentinel client reconnecting through a failover', () => {
  let s: LocalSentinels;
  beforeAll(async () => {
    s = await startSentinels(1);
  }, 60_000);
  afterAll(async () => {
    s.resume(0);
    await s.destroy();
  });

  it('connects to the new primary when +switch-master arrives while it asks a sentinel for the primary', async () => {
    const { client } = connect({ sentinels: s.sentinels, name: MASTER_NAME, sentinelCommandTimeout: 5000 });
    const ends: number[] = [];
    client.on('end', () => ends.push(Date.now()));
    try {
      await client.set('before', '1');
      // The first sentinel (the one that answered) stops answering, so the reconnect after the
      // kill waits on it while the other two fail over and announce +switch-master.
      s.pause(0);
      const old = await s.currentPrimary(1);
      await old.kill();
      await s.promoted(old.port, 30_000, 1);
      // (a command it fails meanwhile fails the test: the client must not end)
      const reply = await eventually('the client writing to the new primary', () => client.set('after', '1'), 30_000);
      expect(reply).toBe('OK');
      expect(ends).toEqual([]);
    } finally {
      client.disconnect();
    }
  }, 90_000);

  it('asks the next sentinel for the primary when the first does not answer', async () => {
    // (sentinel 0 is still stopped; the first test's failover named the primary)
    const { client } = connect({ sentinels: s.sentinels, name: MASTER_NAME });
    try {
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer in 20 s: the client waits on the stopped sentinel')), 20_000);
      });
      const reply = await Promise.race([client.set('through-next', '1'), stuck]).finally(() => clearTimeout(timer));
      expect(reply).toBe('OK');
    } finally {
      client.disconnect();
    }
  }, 60_000);
});
