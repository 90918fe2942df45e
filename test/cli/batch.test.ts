/** `rota batch <id>`, run from source against the test Redis. */
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_NOT_FOUND } from '../../src/cli/exit-codes.js';
import { rota } from '../helpers/cli.js';
import { closeAll, openQueue, redisUrl, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('rota batch', () => {
  it("prints a batch's state, counts and a page of its jobs, and as JSON; an unknown id is not found", async () => {
    const q = openQueue(uniqueQueue('cli-batch'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    const batch = await q.openBatch({ description: 'nightly', onComplete: { task: 'done' } });
    const [a, b] = await batch.submitBulk([{ task: 'w' }, { task: 'w', id: 'second' }]);
    await q.cancel(a.id);
    await batch.close();
    const out = await rota([...args, 'batch', batch.id, '--jobs', '5']);
    expect(out.code).toBe(0);
    const lines = out.stdout.split('\n').map((l) => l.replace(/\s+/g, ' ').trim());
    expect(lines).toEqual(
      expect.arrayContaining([
        `id: ${batch.id}`,
        'state: closed',
        'description: nightly',
        'total: 2',
        'pending: 1',
        'cancelled: 1',
        'ID STATE',
        `${a.id} cancelled`,
        `${b.id} waiting`,
      ]),
    );
    const json = JSON.parse((await rota([...args, 'batch', batch.id, '--json', '--offset', '1'])).stdout);
    expect(json).toMatchObject({
      id: batch.id,
      total: 2,
      pending: 1,
      state: 'closed',
      jobs: [{ id: 'second', state: 'waiting' }],
    });
    const ghost = `${batch.id.slice(0, -5)}zz.${batch.id.slice(-3)}`;
    expect((await rota([...args, 'batch', ghost])).code).toBe(EXIT_NOT_FOUND);
  });
});
