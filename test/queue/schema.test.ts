/** A queue records its schema version; a client of another version refuses it and writes nothing. */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler, SchemaMismatchError } from '../../src/index.js';
import { SCHEMA_VERSION } from '../../src/redis/wire.js';
import { closeAll, openQueue, openWorker, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

/** Every key of queue `name`, sorted. */
async function keysOf(name: string): Promise<string[]> {
  const raw = rawClient();
  try {
    return (await raw.keys(`{rota:${name}}:*`)).sort();
  } finally {
    raw.disconnect();
  }
}

describe('the schema version', () => {
  it('is recorded by the first client to use a queue', async () => {
    const name = uniqueQueue('schema');
    const q = openQueue(name);
    await q.submit({ task: 't' });
    const raw = rawClient();
    try {
      expect(await raw.hget(`{rota:${name}}:meta`, 'schema')).toBe(String(SCHEMA_VERSION));
    } finally {
      raw.disconnect();
    }
  });

  it('of another version makes every call refuse the queue, naming both versions, and write nothing', async () => {
    const name = uniqueQueue('schema');
    const other = String(SCHEMA_VERSION + 1);
    const raw = rawClient();
    await raw.hset(`{rota:${name}}:meta`, 'schema', other);
    raw.disconnect();
    const expectMismatch = async (call: Promise<unknown>) => {
      const err = await call.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SchemaMismatchError);
      expect(err).toMatchObject({ queue: name, found: other, expected: SCHEMA_VERSION });
      expect((err as Error).message).toContain(`schema version ${other}`);
      expect((err as Error).message).toContain(`schema version ${SCHEMA_VERSION}`);
    };

    const q = openQueue(name);
    await expectMismatch(q.submit({ task: 't' }));
    await expectMismatch(q.submitBulk([{ task: 't' }, { task: 't', group: 'g' }]));
    await expectMismatch(q.cancel('x'));
    await expectMismatch(q.pauseGroup('g'));

    const w = openWorker(name, { t: () => 'ok' }, { autorun: false });
    const errors: Error[] = [];
    w.on('error', (e) => errors.push(e));
    await expectMismatch(w.run());
    expect(errors[0]).toBeInstanceOf(SchemaMismatchError);

    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await expectMismatch(tasks.upsert({ id: 'p', task: 't', timer: 'every 1h' }));
    const scheduler = track(new Scheduler(name, { connection: redisUrl() }));
    await expectMismatch(scheduler.start());

    expect(await keysOf(name)).toEqual([`{rota:${name}}:meta`]);
  });
});
