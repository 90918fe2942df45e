/**
 * A large submitBulk goes in calls of at most 1,000 jobs, one after the other, so that no call
 * holds Redis for long; each call is all or none, and a failure names what was written before it.
 */
import { describe, expect, it } from 'vitest';
import { BulkSubmitError, Queue, ValidationError } from '../../src/index.js';
import { privateRedis } from '../helpers/setup.js';

const own = privateRedis();

/** FCALLs the server has run so far. */
async function scriptCalls(): Promise<number> {
  const m = /cmdstat_fcall:calls=(\d+)/.exec(await own.admin.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

describe('a bulk submit larger than one call', () => {
  it('is written in calls of at most 1,000 jobs, in order', async () => {
    const queue = new Queue('bulk', { connection: own.server.url });
    try {
      await queue.submit({ task: 't', id: 'first' });
      const before = await scriptCalls();
      const jobs = await queue.submitBulk(
        Array.from({ length: 3500 }, (_, i) => ({ task: 't', id: `j${i}`, group: `g${i % 7}` })),
      );
      expect(await scriptCalls()).toBe(before + 4);
      expect(jobs.map((j) => j.id)).toEqual(Array.from({ length: 3500 }, (_, i) => `j${i}`));
      expect((await queue.counts()).waiting).toBe(3501);
    } finally {
      await queue.close();
    }
  });

  it('keeps the calls before a failed one, and says which jobs they wrote', async () => {
    const queue = new Queue('bulk-fail', { connection: own.server.url });
    try {
      // an id reserved for a staged periodic occurrence: its call writes nothing
      await own.admin.hset('{rota:bulk-fail}:j:reserved', 'state', 'planned');
      const specs = Array.from({ length: 2500 }, (_, i) => ({ task: 't', id: i === 1200 ? 'reserved' : `j${i}` }));
      const err = await queue.submitBulk(specs).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BulkSubmitError);
      const { written, cause } = err as BulkSubmitError;
      expect(written.map((j) => j.id)).toEqual(Array.from({ length: 1000 }, (_, i) => `j${i}`));
      expect(cause).toBeInstanceOf(ValidationError);
      expect((cause as ValidationError).field).toBe('specs[1200].id');
      expect((await queue.counts()).waiting).toBe(1000);
    } finally {
      await queue.close();
    }
  });
});
