/** The CLI's options for delayed jobs (`submit --delay/--at`) and rate limits (`group-limit --rate`). */
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { TS_EXEC_ARGV } from '../helpers/processes.js';
import { redisUrl, uniqueQueue } from '../helpers/setup.js';

const BIN = new URL('../../src/cli/main.ts', import.meta.url).pathname;

function rota(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...TS_EXEC_ARGV, BIN, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

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
    const shown = await rota([...q, 'job', later.id]);
    expect(shown.stdout).toMatch(/runAt: 2099-01-31T09:00:00\.000Z/);

    // (invalid values: exit 1, as every invalid value)
    const badDelay = await rota([...q, 'submit', 'send', '--delay', 'soon']);
    expect(badDelay.code).toBe(1);
    expect(badDelay.stderr).toMatch(/--delay/);
    const badAt = await rota([...q, 'submit', 'send', '--at', 'someday']);
    expect(badAt.code).toBe(1);
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
    expect((await rota([...q, 'group-limit', 'acme'])).stdout).toMatch(
      /^group acme: concurrency none, weight 1, rate 10\/1s, not paused;/,
    );
    expect((await rota([...q, 'group-limit', 'acme', '--rate', '600/PT1H', '--weight', '2'])).code).toBe(0);
    expect(JSON.parse((await rota([...q, 'groups', '--json'])).stdout.trim())).toMatchObject({
      rate: { max: 600, perMs: 3_600_000 },
      weight: 2,
    });
    expect((await rota([...q, 'group-limit', 'acme', '--rate', 'none', '--weight', '1'])).code).toBe(0);
    expect((await rota([...q, 'groups', '--json'])).stdout.trim()).toBe('');

    // (an invalid value: exit 1, as every invalid value)
    const bad = await rota([...q, 'group-limit', 'acme', '--rate', '10']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--rate must be max\/per/);
    const zero = await rota([...q, 'group-limit', 'acme', '--rate', '0/1s']);
    expect(zero.code).toBe(1);
    expect(zero.stderr).toMatch(/rate\.max/);
  });
});
