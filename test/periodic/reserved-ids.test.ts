/**
 * Issue 38, item 6: a producer cannot take a periodic run's place by submitting its id
 * (`<task id>@<occurrence>`) first; and (item 4's audit) a task or an owner cannot take the
 * place of an event rule's pending run or owner set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type Job, PeriodicTasks, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('ids the scheduler makes', () => {
  it("refuses a producer's submit of a periodic run's id, and the task's own handler runs that occurrence", async () => {
    const name = uniqueQueue('hijack');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const queue = track(new Queue(name, { connection: redisUrl() }));
    await tasks.upsert({ id: 'billing', task: 'bill', timer: 'every 2s' });
    const [next] = await tasks.upcoming({ limit: 1 });
    const hijack = { id: `billing@${next.occurrence}`, task: 'evil', runAt: next.occurrence };
    await expect(queue.submit(hijack)).rejects.toThrow(ValidationError);
    await expect(queue.submit(hijack)).rejects.toMatchObject({ field: 'id' });
    await expect(queue.submitBulk([{ task: 'ok' }, hijack])).rejects.toMatchObject({ field: 'specs[1].id' });
    await expect(queue.submit({ ...hijack, id: `billing@${next.occurrence}/0` })).rejects.toThrow(ValidationError);
    // a backfill's rerun of an occurrence (PeriodicTasks.backfill with force)
    await expect(queue.submit({ ...hijack, id: `billing@${next.occurrence}#2` })).rejects.toMatchObject({ field: 'id' });
    expect(await queue.getJob(hijack.id)).toBeNull();

    const ran: string[] = [];
    const w = track(
      new Worker(
        name,
        {
          bill: () => {
            ran.push('bill');
          },
          evil: () => {
            ran.push('evil');
          },
        },
        { connection: redisUrl() },
      ),
    );
    const done: Job[] = [];
    w.on('completed', (j) => done.push(j));
    const s = track(new Scheduler(name, { connection: redisUrl() }));
    await s.start();
    const job = await eventually(async () => done.find((j) => j.id === hijack.id), 15_000);
    expect(job.task).toBe('bill');
    expect(ran).not.toContain('evil');
    expect((await tasks.runs('billing')).map((r) => r.jobId)).toContain(hijack.id);
  });

  it('still accepts caller ids with @ that are not a run id', async () => {
    const queue = track(new Queue(uniqueQueue('at-ids'), { connection: redisUrl() }));
    for (const id of ['user@example.com', 'a@1x', '@5', 'a b@5', 'order/7x', 'a#2', 'a@1#x']) {
      expect((await queue.submit({ id, task: 't' })).id).toBe(id);
    }
  });
});

describe("an event rule's runs and owner set", () => {
  it("refuses a task id of a rule's pending-run form and an owner of a rule's form", async () => {
    const name = uniqueQueue('rule-reserved');
    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    await tasks.rule({ id: 'welcome', after: 'signup', delay: 60_000, task: 'mail' });
    const [pending] = await tasks.emit({ event: 'signup', subject: 'u1' });
    expect(pending.startsWith('r:')).toBe(true);
    await expect(tasks.upsert({ id: pending, task: 'evil', timer: 'every 1h' })).rejects.toMatchObject({ field: 'id' });
    await expect(tasks.upsert({ id: 'mine', task: 'mine', timer: 'every 1h', owner: 'rule:welcome' })).rejects.toMatchObject({
      field: 'owner',
    });
    expect((await tasks.get(pending))?.task).toBe('mail');
    await tasks.upsert({ id: 'mine', task: 'mine', timer: 'every 1h', owner: 'team:a' });
    await tasks.removeRule('welcome');
    expect(await tasks.get('mine')).not.toBeNull();
  });
});
