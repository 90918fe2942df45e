/** The CLI's options for delayed jobs (`submit --delay/--at`) and rate limits (`group-limit --rate`). */
import { describe, expect, it } from 'vitest';
import { EXIT_INVALID } from '../../src/cli/exit-codes.js';
import { rota } from '../helpers/cli.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

describe('rota CLI: delays and rates', () => {
  it('submits delayed jobs with --delay and --at, and lists them', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('cli')];
    const delayed = JSON.parse((await rota([...q, 'submit', 'send', '--delay', '30s', '--json'])).stdout);
    expect(delayed.state).toBe('delayed');
    expect(delayed.runAt - delayed.submitted).toBe(30_000);
    const at = '2099-01-31T09:00:00.000Z';
    const later = JSON.parse((await rota([...q, 'submit', 'send', '--at', at, '--json'])).stdout);
    expect(later).toMatchObject({ state: 'delayed', runAt: Date.parse(at) });
    const listed = (await rota([...q, 'jobs', '--state', 'delayed', '--json'])).stdout.trim().split('\n');
    expect(listed.map((l) => JSON.parse(l).id)).toEqual([delayed.id, later.id]);
    const table = (await rota([...q, 'jobs', '--state', 'delayed'])).stdout.split('\n');
    expect(table[0]).toMatch(/SUBMITTED +RUN AT$/);
    expect(table.find((l) => l.startsWith(later.id))).toMatch(/ 2099-01-31T09:00:00\.000Z$/);
    const shown = await rota([...q, 'job', later.id]);
    expect(shown.stdout).toMatch(/runAt: 2099-01-31T09:00:00\.000Z/);

    const badDelay = await rota([...q, 'submit', 'send', '--delay', 'soon']);
    expect(badDelay.code).toBe(EXIT_INVALID);
    expect(badDelay.stderr).toMatch(/--delay/);
    const badAt = await rota([...q, 'submit', 'send', '--at', 'someday']);
    expect(badAt.code).toBe(EXIT_INVALID);
    expect(badAt.stderr).toMatch(/--at must be a time/);
    const both = await rota([...q, 'submit', 'send', '--delay', '1s', '--at', at]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/delay: cannot be given with runAt/);
  });

  it('sets, shows and lifts a group rate with group-limit --rate', async () => {
    const q = ['--redis', redisUrl(), '--queue', uniqueQueue('cli')];
    expect((await rota([...q, 'group-limit', 'acme', '--rate', '10/1s'])).code).toBe(0);
    const g = JSON.parse((await rota([...q, 'groups', '--json'])).stdout.trim());
    expect(g).toMatchObject({ group: 'acme', rate: { max: 10, perMs: 1000 } });
    expect((await rota([...q, 'groups'])).stdout).toMatch(/acme .* 10\/1s/);
    expect((await rota([...q, 'group-limit', 'acme', '--rate', '600/PT1H', '--weight', '2'])).code).toBe(0);
    expect(JSON.parse((await rota([...q, 'groups', '--json'])).stdout.trim())).toMatchObject({
      rate: { max: 600, perMs: 3_600_000 },
      weight: 2,
    });
    expect((await rota([...q, 'group-limit', 'acme', '--rate', 'none', '--weight', '1'])).code).toBe(0);
    expect((await rota([...q, 'groups', '--json'])).stdout.trim()).toBe('');

    const bad = await rota([...q, 'group-limit', 'acme', '--rate', '10']);
    expect(bad.code).toBe(EXIT_INVALID);
    expect(bad.stderr).toMatch(/--rate must be max\/per/);
    const zero = await rota([...q, 'group-limit', 'acme', '--rate', '0/1s']);
    expect(zero.code).toBe(EXIT_INVALID);
    expect(zero.stderr).toMatch(/rate\.max/);
  });
});
