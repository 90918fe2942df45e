/**
 * Issue 45, item 5: an event rule is written (and removed) by one script, so concurrent `rule()`
 * calls for one id leave one rule whose record and event memberships agree.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PeriodicTasks, ValidationError } from '../../src/index.js';
import { closeAll, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

const EVENTS = ['ev.0', 'ev.1', 'ev.2', 'ev.3', 'ev.4'];

/** The events whose rule set lists rule `id`. */
async function followed(tasks: PeriodicTasks, id: string): Promise<string[]> {
  const member = await Promise.all(EVENTS.map((e) => tasks.client.sismember(tasks.keys.event(e), id)));
  return EVENTS.filter((_e, i) => member[i] === 1);
}

describe('event rules written by one script', () => {
  it('50 concurrent rule() calls for one id leave one consistent rule, and each event plans only its due runs', async () => {
    const tasks = track(new PeriodicTasks(uniqueQueue('rule-race'), { connection: redisUrl() }));
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        tasks.rule({ id: 'nudge', after: EVENTS[i % EVENTS.length], delay: 1000 * (i + 1), task: 'nudge' }),
      ),
    );
    const rule = (await tasks.getRule('nudge'))!;
    expect(EVENTS).toContain(rule.after);
    expect(await followed(tasks, 'nudge')).toEqual([rule.after]);
    expect((await tasks.rules()).map((r) => r.id)).toEqual(['nudge']);

    const at = Date.now();
    const planned: string[] = [];
    for (const event of EVENTS) planned.push(...(await tasks.emit({ event, subject: 'u1', at })));
    expect(planned).toHaveLength(1);
    const runs = await tasks.list({ owner: 'rule:nudge' });
    expect(runs.map((t) => [t.id, t.nextrun])).toEqual([[planned[0], at + rule.delayMs]]);
  });

  it("gives a rule's runs a job's default retries (3) when the rule names none", async () => {
    const tasks = track(new PeriodicTasks(uniqueQueue('rule-retries'), { connection: redisUrl() }));
    await tasks.rule({ id: 'plain', after: 'signup', delay: 'PT1H', task: 'nudge' });
    await tasks.rule({ id: 'once', after: 'signup', delay: 'PT1H', task: 'nudge', maxRetries: 0 });
    expect((await tasks.getRule('plain'))?.maxRetries).toBe(3);
    expect((await tasks.getRule('once'))?.maxRetries).toBe(0);
    await tasks.emit({ event: 'signup', subject: 'u1' });
    const runs = await tasks.list({ owner: 'rule:plain' });
    expect(runs.map((t) => t.maxRetries)).toEqual([3]);
    expect((await tasks.list({ owner: 'rule:once' })).map((t) => t.maxRetries)).toEqual([0]);
  });

  it('removeRule removes the record, the memberships and the pending runs; concurrent calls remove it once', async () => {
    const tasks = track(new PeriodicTasks(uniqueQueue('rule-remove'), { connection: redisUrl() }));
    await tasks.rule({ id: 'nudge', after: 'ev.1', delay: 'PT1H', task: 'nudge' });
    await tasks.rule({ id: 'nudge', after: 'ev.2', delay: 'PT1H', task: 'nudge' });
    expect(await followed(tasks, 'nudge')).toEqual(['ev.2']);
    await tasks.emit({ event: 'ev.2', subject: 'u1' });
    await tasks.emit({ event: 'ev.2', subject: 'u2' });
    expect(await tasks.list({ owner: 'rule:nudge' })).toHaveLength(2);

    const removed = await Promise.all(Array.from({ length: 10 }, () => tasks.removeRule('nudge')));
    expect(removed.filter(Boolean)).toHaveLength(1);
    expect(await tasks.getRule('nudge')).toBeNull();
    expect(await tasks.rules()).toEqual([]);
    expect(await followed(tasks, 'nudge')).toEqual([]);
    expect(await tasks.list({ owner: 'rule:nudge' })).toEqual([]);
    expect(await tasks.upcoming()).toEqual([]);
  });

  it('bad input is refused with a typed error and writes nothing', async () => {
    const tasks = track(new PeriodicTasks(uniqueQueue('rule-bad'), { connection: redisUrl() }));
    await expect(tasks.rule({ id: 'nudge', after: '', delay: 1000, task: 'nudge' })).rejects.toMatchObject({ field: 'after' });
    await expect(tasks.rule({ id: 'nudge', after: 'ev.1', delay: '7 days', task: 'nudge' })).rejects.toThrow(ValidationError);
    await expect(tasks.rule({ id: 'bad id!', after: 'ev.1', delay: 1000, task: 'nudge' })).rejects.toThrow(ValidationError);
    await expect(tasks.removeRule('bad id!')).rejects.toThrow(ValidationError);
    expect(await tasks.rules()).toEqual([]);
    expect(await followed(tasks, 'nudge')).toEqual([]);
  });
});
