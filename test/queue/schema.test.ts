/**
 * A queue records its schema version; a client refuses, writing nothing, a queue of a schema it
 * cannot read (the version rule of docs/upgrading.md), saying what to run.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, Scheduler, SchemaMismatchError } from '../../src/index.js';
import { META, SCHEMA_VERSION } from '../../src/redis/wire.js';
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

  it('of a newer version it cannot read makes every call refuse the queue, naming both versions, and write nothing', async () => {
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

describe('the version rule', () => {
  /** The error a submit to a queue recording `fields` in its meta hash rejects with (null: none). */
  async function submitWith(fields: Record<string, string>): Promise<unknown> {
    const name = uniqueQueue('schema-rule');
    const raw = rawClient();
    await raw.hset(`{rota:${name}}:meta`, fields);
    raw.disconnect();
    return openQueue(name)
      .submit({ task: 't' })
      .then(
        () => null,
        (e: unknown) => e,
      );
  }

  it('reads data of a newer schema whose oldest reader is this one', async () => {
    expect(await submitWith({ schema: String(SCHEMA_VERSION + 1), [META.compat]: String(SCHEMA_VERSION) })).toBeNull();
  });

  it('refuses data a newer build wrote that this one cannot read, saying to run a newer Rota', async () => {
    const err = await submitWith({ schema: String(SCHEMA_VERSION + 2), [META.compat]: String(SCHEMA_VERSION + 1) });
    expect(err).toBeInstanceOf(SchemaMismatchError);
    expect((err as Error).message).toContain(`needs a Rota of schema version ${SCHEMA_VERSION + 1} or newer`);
  });

  it('refuses data older than it reads, saying to run rota migrate', async () => {
    const err = await submitWith({ schema: String(SCHEMA_VERSION - 1) });
    expect(err).toBeInstanceOf(SchemaMismatchError);
    expect(err).toMatchObject({ remedy: 'migrate' });
    expect((err as Error).message).toMatch(/run `rota migrate --queue schema-rule\S*` of this version first/);
  });
});
