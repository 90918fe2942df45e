/** A timer with no occurrence left (a one-shot due date in the past) is refused: the task would never run. */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, ValidationError } from '../../src/index.js';
import { closeAll, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('a timer that never elapses again', () => {
  it('refuses a one-shot due date in the past with a ValidationError, writing nothing', async () => {
    let now = Date.parse('2026-06-01T12:00:00Z');
    const tasks = track(new PeriodicTasks(uniqueQueue('never'), { connection: redisUrl(), now: () => now }));
    const err = await tasks.upsert({ id: 'late', task: 't', timer: '2026-06-01T11:00:00Z' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe('timer');
    expect((err as Error).message).toMatch(/no occurrence after now .* would never run/);
    expect(await tasks.get('late')).toBeNull();
    expect(await tasks.list()).toEqual([]);

    // A due date ahead is taken; once it has passed, upserting the same definition again is too
    // (an application that upserts its tasks at each start), but moving it to the past is not.
    const ahead = await tasks.upsert({ id: 'soon', task: 't', timer: '2026-06-01T13:00:00Z' });
    expect(ahead.nextrun).toBe(Date.parse('2026-06-01T13:00:00Z'));
    now = Date.parse('2026-06-01T14:00:00Z');
    await expect(tasks.upsert({ id: 'soon', task: 't', timer: '2026-06-01T13:00:00Z' })).resolves.toMatchObject({ id: 'soon' });
    await expect(tasks.upsert({ id: 'soon', task: 't', timer: '2026-06-01T13:30:00Z' })).rejects.toThrow(ValidationError);
    expect((await tasks.get('soon'))?.timer).toBe('2026-06-01T13:00:00Z');
  });
});
