/**
 * A periodic timer may elapse at most once a second (MIN_PERIOD_MS): faster intervals, and
 * calendar events whose fractional seconds elapse closer together, are refused when the task is
 * defined, with a ValidationError naming the timer, and nothing is written.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, ValidationError } from '../../src/index.js';
import { MIN_PERIOD_MS } from '../../src/periodic/definition.js';
import { closeAll, rawClient, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('the shortest period of a periodic timer', () => {
  it(`refuses timers that elapse less than ${MIN_PERIOD_MS} ms apart, and writes nothing`, async () => {
    const name = uniqueQueue('min-period');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    for (const timer of [
      'every 1ms',
      'every 999ms',
      'PT0.5S',
      'R5/2030-01-01T00:00:00Z/PT0.1S',
      '*:*:0/0.5',
      '*-*-* *:*:00,00.25',
      // (the last second of a minute and the first of the next)
      '*:*:00,59.5',
    ]) {
      const err = await tasks.upsert({ id: 'fast', task: 't', timer, overlap: 'allow' }).catch((e: unknown) => e);
      expect(err, timer).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe('timer');
      expect((err as Error).message).toMatch(/more often than the shortest period a periodic task may have \(1000 ms\)/);
    }
    const r = rawClient();
    try {
      expect(await r.keys(`{rota:${name}}*`)).toEqual([]);
    } finally {
      r.disconnect();
    }
  });

  it('accepts timers of one second and slower', async () => {
    const tasks = track(new PeriodicTasks(uniqueQueue('min-period'), { connection: redisUrl() }));
    for (const timer of ['every 1s', 'PT1S', '*:*:*', '* * * * * *', '*:*:0/1.5', 'daily', '*:0/15', '2030-01-01T00:00:00Z']) {
      await expect(tasks.upsert({ id: 'ok', task: 't', timer }), timer).resolves.toMatchObject({ timer });
    }
  });
});
