import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliEntry, rota as run } from '../helpers/cli.js';

/** `rota ...args` in UTC, so that output without a zone does not depend on the machine's. */
const rota = (...args: string[]) => run(args, { TZ: 'UTC' });

describe('rota calendar', () => {
  it('prints the normalized form and the next elapses in the zone of --tz, or in UTC with --utc', async () => {
    const args = ['calendar', '--from', '2026-03-28T12:00:00Z', '--iterations', '3', '--tz', 'Europe/Paris', 'Mon..Fri 09:00'];
    const r = await rota(...args);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Normalized form: Mon..Fri *-*-* 09:00:00');
    // 2026-03-29 is the spring-forward day in Paris: +01:00 before, +02:00 after
    expect(r.stdout).toContain('    Next elapse: 2026-03-30T09:00:00+02:00');
    expect(r.stdout).toContain('       Iter. #3: 2026-04-01T09:00:00+02:00');
    const utc = await rota('--utc', ...args);
    expect(utc.stdout).toContain('    Next elapse: 2026-03-30T07:00:00.000Z');
    expect(utc.stdout).toContain('       Iter. #3: 2026-04-01T07:00:00.000Z');
    // a spec that names its zone is printed in that zone; one with neither zone nor --tz in UTC
    const named = await rota(
      'calendar',
      '--from',
      '2026-03-28T12:00:00Z',
      '--tz',
      'Europe/Paris',
      'Sat *-*-* 10:00 America/New_York',
    );
    expect(named.stdout).toContain('    Next elapse: 2026-03-28T10:00:00-04:00');
    expect((await rota('calendar', '--from', '2026-03-28T12:00:00Z', 'daily')).stdout).toContain(
      'Next elapse: 2026-03-29T00:00:00.000Z',
    );
  });

  it('prints one JSON object per spec with --json, and exits 1 when a spec is invalid', async () => {
    const r = await rota(
      'calendar',
      '--json',
      '--from',
      '2026-03-28T12:00:00Z',
      '--iterations',
      '2',
      'daily',
      'every 2h30m',
      '25:00',
      '0 12 * * *',
    );
    expect(r.code).toBe(1);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toEqual({
      spec: 'daily',
      kind: 'calendar',
      normalized: '*-*-* 00:00:00',
      next: ['2026-03-29T00:00:00.000Z', '2026-03-30T00:00:00.000Z'],
    });
    expect(lines[1]).toMatchObject({
      kind: 'interval',
      normalized: 'every 2h30m',
      next: ['2026-03-28T12:30:00.000Z', '2026-03-28T15:00:00.000Z'],
    });
    expect(lines[2]).toMatchObject({ spec: '25:00' });
    expect(String(lines[2]!.error)).toContain('hour at position 0');
    expect(lines[3]).toMatchObject({ kind: 'cron', next: ['2026-03-29T12:00:00.000Z', '2026-03-30T12:00:00.000Z'] });
  });

  it('reports a spec it cannot parse on stderr, prefixed rota:, and the others on stdout as usual', async () => {
    const text = await rota('calendar', '--from', '2026-03-28T12:00:00Z', 'bad spec', 'daily');
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^rota: failed to parse "bad spec": /);
    expect(text.stdout).not.toContain('bad spec');
    expect(text.stdout).toMatch(/^ {2}Original form: daily\n/);
    const json = await rota('calendar', '--json', 'bad spec');
    expect(json.code).toBe(1);
    expect(json.stderr).toMatch(/^rota: failed to parse "bad spec": /);
    expect(JSON.parse(json.stdout)).toMatchObject({ spec: 'bad spec' });
  });

  it('says "never" when a spec has no next elapse', async () => {
    const r = await rota('calendar', '--from', '2026-03-28T12:00:00Z', '2020-01-01');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Next elapse: never');
  });

  it('exits 1 on an invalid value and 2 on a usage error', async () => {
    expect((await rota('calendar', '--iterations', 'zero', 'daily')).code).toBe(1);
    expect((await rota('calendar', '--tz', 'Mars/Olympus', 'daily')).code).toBe(1);
    expect((await rota('calendar', '--from', 'soon', 'daily')).code).toBe(1);
    expect((await rota('calendar')).code).toBe(2);
    expect((await rota('no-such-command')).code).toBe(2);
    expect((await rota('--help')).code).toBe(0);
  });

  it('ends quietly, exit status 0, when its reader stops early (rota calendar ... | head -1)', () => {
    const command = [process.execPath, ...cliEntry(), 'calendar', '--iterations', '2000', "'*:*:0/1'"].join(' ');
    const r = spawnSync('bash', ['-o', 'pipefail', '-c', `${command} | head -1`], { encoding: 'utf8' });
    expect(r.stdout).toBe('  Original form: *:*:0/1\n');
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(r.status).toBe(0);
  });
});
