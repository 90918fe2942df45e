/** `rota delete` and `rota promote`, run from source against the test Redis. */
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_NOT_FOUND, EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { rota } from '../helpers/cli.js';
import { closeAll, openQueue, redisUrl, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('rota delete and rota promote', () => {
  it('deletes jobs by id and over a filter, and says what it did', async () => {
    const q = openQueue(uniqueQueue('cli-del'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    await q.submitBulk([
      { id: 'a', task: 't', group: 'g1' },
      { id: 'b', task: 't', group: 'g1' },
      { id: 'c', task: 't', group: 'g2' },
      { id: 'd', task: 'u', group: 'g2' },
    ]);
    expect(await rota([...args, 'delete', 'a', 'nope'])).toMatchObject({
      code: 0,
      stdout: 'Deleted 1 job; 1 named no job.\n',
    });
    expect(await q.getJob('a')).toBeNull();
    expect(await rota([...args, 'delete', '--all', '--state', 'waiting', '--group', 'g2', '--task', 't'])).toMatchObject({
      code: 0,
      stdout: 'Deleted 1 job.\n',
    });
    expect((await rota([...args, 'delete', 'a'])).code).toBe(EXIT_NOT_FOUND);
    expect((await rota([...args, 'delete', 'b', '--all', '--state', 'waiting'])).code).toBe(EXIT_USAGE);
    expect((await q.jobs({ state: 'waiting' })).map((j) => j.id).sort()).toEqual(['b', 'd']);
  });

  it('promotes delayed jobs to the front of waiting', async () => {
    const q = openQueue(uniqueQueue('cli-promote'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    await q.submit({ id: 'w', task: 't' });
    await q.submitBulk([
      { id: 'd1', task: 't', delay: 3_600_000 },
      { id: 'd2', task: 't', delay: 3_600_000 },
    ]);
    expect(await rota([...args, 'promote', 'd1'])).toMatchObject({
      code: 0,
      stdout: 'Promoted 1 job to the front of waiting.\n',
    });
    const all = await rota([...args, 'promote', '--all', '--state', 'delayed', '--json']);
    expect(JSON.parse(all.stdout)).toMatchObject({ done: 1, more: false });
    expect(await q.counts()).toMatchObject({ delayed: 0, waiting: 3 });
    expect((await q.jobs({ state: 'waiting' })).map((j) => j.id)).toEqual(['d2', 'd1', 'w']);
  });
});
