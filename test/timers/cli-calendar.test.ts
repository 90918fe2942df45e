import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TS_EXEC_ARGV } from '../helpers/processes.js';

const bin = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

function rota(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [...TS_EXEC_ARGV, bin, ...args], {
    encoding: 'utf8',
    env: { ...process.env, TZ: 'UTC' },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rota calendar', () => {
  it('prints the normalized form and the next elapses in the zone of --tz, or in UTC with --utc', () => {
    const args = ['calendar', '--from', '2026-03-28T12:00:00Z', '--iterations', '3', '--tz', 'Europe/Paris', 'Mon..Fri 09:00'];
    const r = rota(...args);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Normalized form: Mon..Fri *-*-* 09:00:00');
    // 2026-03-29 is the spring-forward day in Paris: +01:00 before, +02:00 after
    expect(r.stdout).toContain('    Next elapse: 2026-03-30T09:00:00+02:00');
    expect(r.stdout).toContain('       Iter. #3: 2026-04-01T09:00:00+02:00');
    const utc = rota('--utc', ...args);
    expect(utc.stdout).toContain('    Next elapse: 2026-03-30T07:00:00.000Z');
    expect(utc.stdout).toContain('       Iter. #3: 2026-04-01T07:00:00.000Z');
    // a spec that names its zone is printed in that zone; one with neither zone nor --tz in UTC
    const named = rota('calendar', '--from', '2026-03-28T12:00:00Z', '--tz', 'Europe/Paris', 'Sat *-*-* 10:00 America/New_York');
    expect(named.stdout).toContain('    Next elapse: 2026-03-28T10:00:00-04:00');
    expect(rota('calendar', '--from', '2026-03-28T12:00:00Z', 'daily').stdout).toContain('Next elapse: 2026-03-29T00:00:00.000Z');
  });

  it('prints one JSON object per spec with --json, and exits 1 when a spec is invalid', () => {
    const r = rota(
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
    expect(r.status).toBe(1);
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

  it('reports a spec it cannot parse on stderr, prefixed rota:, and the others on stdout as usual', () => {
    const text = rota('calendar', '--from', '2026-03-28T12:00:00Z', 'bad spec', 'daily');
    expect(text.status).toBe(1);
    expect(text.stderr).toMatch(/^rota: failed to parse "bad spec": /);
    expect(text.stdout).not.toContain('bad spec');
    expect(text.stdout).toMatch(/^ {2}Original form: daily\n/);
    const json = rota('calendar', '--json', 'bad spec');
    expect(json.status).toBe(1);
    expect(json.stderr).toMatch(/^rota: failed to parse "bad spec": /);
    expect(JSON.parse(json.stdout)).toMatchObject({ spec: 'bad spec' });
  });

  it('says "never" when a spec has no next elapse', () => {
    const r = rota('calendar', '--from', '2026-03-28T12:00:00Z', '2020-01-01');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Next elapse: never');
  });

  it('exits 1 on an invalid value and 2 on a usage error', () => {
    expect(rota('calendar', '--iterations', 'zero', 'daily').status).toBe(1);
    expect(rota('calendar', '--tz', 'Mars/Olympus', 'daily').status).toBe(1);
    expect(rota('calendar', '--from', 'soon', 'daily').status).toBe(1);
    expect(rota('calendar').status).toBe(2);
    expect(rota('no-such-command').status).toBe(2);
    expect(rota('--help').status).toBe(0);
  });

  it('ends quietly, exit status 0, when its reader stops early (rota calendar ... | head -1)', () => {
    const command = [process.execPath, ...TS_EXEC_ARGV, bin, 'calendar', '--iterations', '2000', "'*:*:0/1'"].join(' ');
    const r = spawnSync('bash', ['-o', 'pipefail', '-c', `${command} | head -1`], { encoding: 'utf8' });
    expect(r.stdout).toBe('  Original form: *:*:0/1\n');
    expect(r.stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(r.status).toBe(0);
  });
});
