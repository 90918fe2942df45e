/** `rota reshard`: changes a queue's shard count, says what it did, refuses what it must. */
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { rota } from '../helpers/cli.js';
import { closeAll, openQueue, openWorker, redisUrl, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

describe('rota reshard', () => {
  it('moves the jobs, says what it did, and does nothing when the queue has the count already', async () => {
    const name = uniqueQueue('cli-reshard');
    const queue = openQueue(name);
    const jobs = await queue.submitBulk(['a', 'b', 'c', 'd'].map((group) => ({ task: 't', group })));
    await queue.setGroupLimit('b', { concurrency: 1 });
    const r = await rota(['--redis', redisUrl(), 'reshard', name, '--to', '3']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toBe(
      `queue ${name}: 1 -> 3 shards; 4 jobs moved, settings of 1 group copied. Start its executors, producers and schedulers with shards: 3\n`,
    );
    const sharded = openQueue(name, { shards: 3 });
    for (const job of jobs) expect((await sharded.getJob(job.id))?.state).toBe('waiting');
    expect((await sharded.groups()).find((g) => g.group === 'b')?.limit).toBe(1);

    const json = await rota(['--redis', redisUrl(), 'reshard', name, '--to', '2', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      queue: name,
      from: 3,
      to: 2,
      moved: expect.any(Number),
      dropped: 1,
      resumed: false,
    });
    const again = await rota(['--redis', redisUrl(), 'reshard', name, '--to', '2']);
    expect(again).toMatchObject({ code: 0, stdout: `queue ${name} has 2 shards already; nothing to do\n` });
  });

  it('refuses while an executor is live (status 1), and a bad or missing count', async () => {
    const name = uniqueQueue('cli-reshard');
    await openQueue(name).submit({ task: 't' });
    openWorker(name, { other: async () => {} });
    const busy = await rota(['--redis', redisUrl(), 'reshard', name, '--to', '2']);
    expect(busy.code).toBe(EXIT_INVALID);
    expect(busy.stderr).toMatch(
      new RegExp(`^rota: cannot reshard queue "${name}": 1 executor is live .*nothing was written\\)\\n$`),
    );
    const zero = await rota(['--redis', redisUrl(), 'reshard', name, '--to', '0']);
    expect(zero.code).toBe(EXIT_INVALID);
    expect(zero.stderr).toMatch(/--to must be a whole number from 1 to 1024/);
    expect((await rota(['--redis', redisUrl(), 'reshard', name])).code).toBe(EXIT_USAGE);
    expect((await rota(['--redis', redisUrl(), 'reshard', '--to', '2'])).code).toBe(EXIT_USAGE);
  });
});
