/**
 * Issue 55, item 2: every path that makes jobs (submit, bulk submit, periodic task definitions,
 * event rules and the events they follow) checks a job's fields with one schema, lengths in bytes.
 * Event rules once counted characters: a task or group of 150 two-byte characters (300 bytes) was
 * a rule's, though no submit takes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeriodicTasks, Queue, ValidationError } from '../../src/index.js';
import { closeAll, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

const fits = 'é'.repeat(100); // 100 characters, 200 bytes
const over = 'é'.repeat(150); // 150 characters, 300 bytes

let queue: Queue;
let tasks: PeriodicTasks;

beforeAll(() => {
  const name = uniqueQueue('fields');
  queue = track(new Queue(name, { connection: redisUrl() }));
  tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
});
afterAll(closeAll);

/** Each way a job's `task` and `group` reach Redis, given the field's value. */
const paths: Record<string, (field: 'task' | 'group', value: string) => Promise<unknown>> = {
  submit: (f, v) => queue.submit({ task: 't', [f]: v }),
  submitBulk: (f, v) => queue.submitBulk([{ task: 't', [f]: v }]),
  upsert: (f, v) => tasks.upsert({ id: `p-${f}-${v.length}`, task: 't', timer: 'every 1h', [f]: v }),
  rule: (f, v) => tasks.rule({ id: `r-${f}-${v.length}`, after: 'seen', delay: 1000, task: 't', [f]: v }),
};

describe('one job-field schema', () => {
  for (const [path, make] of Object.entries(paths)) {
    for (const field of ['task', 'group'] as const) {
      it(`${path}: a ${field} of 200 bytes is taken, one of 300 bytes (150 characters) refused`, async () => {
        await expect(make(field, fits)).resolves.toBeTruthy();
        const err = await make(field, over).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ValidationError);
        expect((err as ValidationError).field).toMatch(new RegExp(`(^|\\.)${field}$`));
        expect((err as ValidationError).message).toContain('must be at most 200 bytes');
      });
    }
  }

  it('an emitted event counts its name and subject in bytes too', async () => {
    await expect(tasks.emit({ event: 'seen', subject: '€'.repeat(333) })).resolves.toBeDefined();
    await expect(tasks.emit({ event: 'seen', subject: '€'.repeat(334) })).rejects.toMatchObject({ field: 'subject' });
    await expect(tasks.emit({ event: '€'.repeat(67), subject: 's' })).rejects.toMatchObject({ field: 'event' });
  });
});
