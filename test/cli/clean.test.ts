/** `rota clean` and `rota retry --all-failed`, run from source against the test Redis; and what `rota job` leaves out. */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_USAGE } from '../../src/cli/exit-codes.js';
import type { Queue } from '../../src/index.js';
import { rota } from '../helpers/cli.js';
import { closeAll, openQueue, rawClient, redisUrl, uniqueQueue } from '../helpers/setup.js';
import { finishRuns, settings, storeOf, takeRuns } from '../helpers/store.js';

afterEach(closeAll);
let raw: Redis;
beforeAll(() => {
  raw = rawClient();
});
afterAll(() => raw.disconnect());

/** Fails every waiting job of `q` for good, as an executor would. */
async function failAll(q: Queue): Promise<void> {
  const store = storeOf(raw, q.name);
  const runs = await takeRuns(store, 1000, settings('exec-cli'));
  await finishRuns(
    store,
    runs.map(([id, token]) => [id, token, '+p', 'boom']),
    settings('exec-cli'),
  );
}

describe('rota clean', () => {
  it('removes one group’s failed jobs, and none that finished more recently than --older-than', async () => {
    const q = openQueue(uniqueQueue('cli-clean'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    await q.submitBulk([
      { task: 't', group: 'a' },
      { task: 't', group: 'a' },
      { task: 't', group: 'b' },
    ]);
    await failAll(q);

    expect(await rota([...args, 'clean', '--state', 'failed', '--older-than', '1h'])).toMatchObject({
      code: 0,
      stdout: '0 failed jobs removed\n',
    });
    expect(await rota([...args, 'clean', '--state', 'failed', '--group', 'a'])).toMatchObject({
      code: 0,
      stdout: '2 failed jobs removed\n',
    });
    expect((await q.jobs({ state: 'failed' })).map((j) => j.group)).toEqual(['b']);
  });

  it('refuses a state that is not final, a bad duration and a bad limit as invalid values, and no state as a usage error', async () => {
    const q = openQueue(uniqueQueue('cli-clean'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    const waiting = await rota([...args, 'clean', '--state', 'waiting']);
    expect(waiting.code).toBe(EXIT_INVALID);
    expect(waiting.stderr).toMatch(/expected one of success, failed, cancelled/);
    const duration = await rota([...args, 'clean', '--state', 'failed', '--older-than', '7 fortnights']);
    expect(duration.code).toBe(EXIT_INVALID);
    expect(duration.stderr).toMatch(/--older-than: .*unknown unit "fortnights"/);
    expect((await rota([...args, 'clean', '--state', 'failed', '--limit', '0'])).code).toBe(EXIT_INVALID);
    expect((await rota([...args, 'clean'])).code).toBe(EXIT_USAGE);
  });
});

describe('rota retry --all-failed', () => {
  it('puts back the failed jobs of one task; a single retry and --all-failed do not mix', async () => {
    const q = openQueue(uniqueQueue('cli-retry'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    const [send, other] = await q.submitBulk([{ task: 'send' }, { task: 'other' }]);
    await failAll(q);

    expect(await rota([...args, 'retry', '--all-failed', '--task', 'send'])).toMatchObject({
      code: 0,
      stdout: '1 failed job put back as waiting\n',
    });
    expect((await q.getJob(send.id))!.state).toBe('waiting');
    expect((await q.getJob(other.id))!.state).toBe('failed');

    expect((await rota([...args, 'retry', other.id, '--all-failed'])).code).toBe(2);
    expect((await rota([...args, 'retry'])).code).toBe(2);
    expect((await rota([...args, 'retry', other.id, '--task', 'other'])).code).toBe(2);
    expect((await q.getJob(other.id))!.state).toBe('failed');

    expect(await rota([...args, 'retry', '--all-failed'])).toMatchObject({
      code: 0,
      stdout: '1 failed job put back as waiting\n',
    });
    expect((await q.getJob(other.id))!.state).toBe('waiting');
  });
});

describe('rota job', () => {
  it('prints no take sequence, the queue’s internal lease token', async () => {
    const q = openQueue(uniqueQueue('cli-job'));
    const args = ['--redis', redisUrl(), '--queue', q.name];
    const job = await q.submit({ task: 't' });
    await takeRuns(storeOf(raw, q.name), 1, settings('exec-cli'));
    expect((await q.getJob(job.id))!.takeSeq).toBeGreaterThan(0);

    const shown = await rota([...args, 'job', job.id, '--json']);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: job.id, state: 'scheduled' });
    expect(JSON.parse(shown.stdout)).not.toHaveProperty('takeSeq');
    const table = await rota([...args, 'job', job.id]);
    expect(table.stdout).toMatch(/state: scheduled/);
    expect(table.stdout).not.toMatch(/takeSeq/);
    const listed = await rota([...args, 'jobs', '--state', 'scheduled', '--json']);
    expect(JSON.parse(listed.stdout)).not.toHaveProperty('takeSeq');
  });
});
