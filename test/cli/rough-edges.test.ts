/**
 * The CLI as a new user meets it: --version, one-line usage errors, exit statuses that mean one
 * thing each, times in the task's zone, and commands that say what they did not do.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { EXIT_INVALID, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE } from '../../src/cli/exit-codes.js';
import { PeriodicTasks, Scheduler } from '../../src/index.js';
import { rota } from '../helpers/cli.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

afterEach(closeAll);

const on = () => ['--redis', redisUrl(), '--queue', uniqueQueue('cli-edges')];

describe('rota, as a new user meets it', () => {
  it('prints its version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(await rota([flag])).toMatchObject({ code: EXIT_OK, stdout: `${version}\n` });
  });

  it('answers a usage error with one line and where to look, exit 2', async () => {
    const missing = await rota(['submit']);
    expect(missing.code).toBe(EXIT_USAGE);
    expect(missing.stderr).toBe("rota: missing required argument 'task'\n(see: rota submit --help)\n");
    const unknown = await rota(['periodic', 'add', '--bogus']);
    expect(unknown.code).toBe(EXIT_USAGE);
    expect(unknown.stderr).toBe("rota: unknown option '--bogus'\n(see: rota periodic add --help)\n");
    expect((await rota(['frobnicate'])).code).toBe(EXIT_USAGE);
  });

  it('exits 1 on every invalid value, whoever checks it, and lists the exit statuses in --help', async () => {
    const q = on();
    const invalid = await Promise.all([
      rota(['calendar', '--tz', 'Nowhere/X', 'daily']),
      rota([...q, 'periodic', 'add', 't', 't', 'daily', '--tz', 'Nowhere/X']),
      rota([...q, 'submit', 'x', '--priority', 'urgent']),
      rota([...q, 'submit', 'x', '--max-retries', 'abc']),
      rota([...q, 'submit', 'x', '--args', '{bad']),
      rota([...q, 'jobs', '--state', 'lost']),
      rota(['--redis', 'notaurl', 'groups']),
      rota(['--redis', 'http://x', 'groups']),
      rota(['--redis', 'notaurl', 'demo', '--duration', '1']),
      rota([...q, 'jobs', '--limit', '20000']),
    ]);
    for (const r of invalid) {
      expect(r.code, r.stderr).toBe(EXIT_INVALID);
      expect(r.stderr).toMatch(/^rota: /);
      expect(r.stderr).not.toContain('Usage:');
    }
    expect(invalid[6].stderr).toContain('--redis: "notaurl" is not a URL');
    expect(invalid[7].stderr).toContain('--redis: "http://x" is not a Redis URL');
    expect(invalid[8].stderr).toContain('--redis: "notaurl" is not a URL');
    // the option's own bound is the one Queue.jobs keeps
    expect(invalid[9].stderr).toMatch(/--limit.*10,?000/);
    const help = await rota(['--help']);
    expect(help.stdout).toMatch(
      /Exit status:\n {2}0 {2}ok\n {2}1 {2}invalid value.*\n {2}2 {2}usage error.*\n {2}3 .*\n {2}4 {2}not found/,
    );
  });

  it('says when submit --id found the job already there', async () => {
    const q = on();
    const first = await rota([...q, 'submit', 'x', '--id', 'once']);
    expect(first).toMatchObject({ code: EXIT_OK, stdout: 'once\n', stderr: '' });
    const again = await rota([...q, 'submit', 'y', '--id', 'once', '--json']);
    expect(again.code).toBe(EXIT_OK);
    expect(again.stderr).toBe('rota: job once already existed (waiting); nothing was submitted\n');
    expect(JSON.parse(again.stdout)).toMatchObject({ id: 'once', task: 'x' });
  });

  it('refuses to pause or resume a group it does not know (4) unless told to create it; group-limit alone shows the group', async () => {
    const q = on();
    const pause = await rota([...q, 'pause-group', 'acme']);
    expect(pause.code).toBe(EXIT_NOT_FOUND);
    expect(pause.stderr).toMatch(/no group "acme" .*--create pauses it/);
    expect((await rota([...q, 'resume-group', 'acme'])).code).toBe(EXIT_NOT_FOUND);
    expect((await rota([...q, 'groups', '--json'])).stdout).toBe('');
    expect((await rota([...q, 'group-limit', 'acme'])).code).toBe(EXIT_NOT_FOUND);

    expect(await rota([...q, 'pause-group', 'acme', '--create'])).toMatchObject({ code: EXIT_OK, stdout: 'group acme paused\n' });
    expect((await rota([...q, 'group-limit', 'acme', '--concurrency', '3'])).code).toBe(EXIT_OK);
    const shown = await rota([...q, 'group-limit', 'acme']);
    expect(shown).toMatchObject({
      code: EXIT_OK,
      stdout: expect.stringMatching(/^group acme: concurrency 3, weight 1, rate none, paused;/),
    });
    expect(JSON.parse((await rota([...q, 'group-limit', 'acme', '--json'])).stdout)).toMatchObject({
      group: 'acme',
      paused: true,
      limit: 3,
      weight: 1,
    });
    expect(await rota([...q, 'resume-group', 'acme'])).toMatchObject({ code: EXIT_OK, stdout: 'group acme resumed\n' });
  });

  it('stats says that no job succeeded rather than printing "p50 - ms"', async () => {
    const r = await rota([...on(), 'stats']);
    expect(r.code).toBe(EXIT_OK);
    expect(r.stdout).toContain('wait (submit to start): no job succeeded in the last minute\n');
    expect(r.stdout).not.toContain('- ms');
  });

  it('refuses a one-shot timer in the past, exit 1', async () => {
    const r = await rota([...on(), 'periodic', 'add', 'late', 't', '2020-01-01T00:00:00Z']);
    expect(r.code).toBe(EXIT_INVALID);
    expect(r.stderr).toMatch(/^rota: timer: "2020-01-01T00:00:00Z" has no occurrence after now/);
  });

  it("prints a periodic task's times in its zone, or in UTC with --utc", async () => {
    const q = on();
    const add = await rota([...q, 'periodic', 'add', 'paris', 't', '*-*-* 09:00', '--tz', 'Europe/Paris']);
    expect(add.stdout).toMatch(/^paris: next run \d{4}-\d\d-\d\dT09:00:00\+0[12]:00\n$/);
    const inUtc = await rota([...q, '--utc', 'periodic', 'add', 'paris', 't', '*-*-* 09:00', '--tz', 'Europe/Paris']);
    expect(inUtc.stdout).toMatch(/^paris: next run \d{4}-\d\d-\d\dT0[78]:00:00\.000Z\n$/);
    // a zone named in the spec itself counts as the task's zone
    await rota([...q, 'periodic', 'add', 'tokyo', 't', '*-*-* 09:00 Asia/Tokyo']);
    const list = await rota([...q, 'periodic', 'list']);
    expect(list.stdout).toMatch(/^paris .* \d{4}-\d\d-\d\dT09:00:00\+0[12]:00 /m);
    expect(list.stdout).toMatch(/^tokyo .* \d{4}-\d\d-\d\dT09:00:00\+09:00 /m);
    const next = await rota([...q, 'periodic', 'next', '--limit', '4']);
    expect(next.stdout).toMatch(/^\d{4}-\d\d-\d\dT09:00:00\+0[12]:00 .* paris /m);
    expect(next.stdout).toMatch(/^\d{4}-\d\d-\d\dT09:00:00\+09:00 .* tokyo /m);
    expect((await rota([...q, '--utc', 'periodic', 'next'])).stdout).not.toMatch(/\+0\d:00/);
  });

  it('warns when no scheduler replica would submit the run of periodic add, enable or trigger', async () => {
    const name = uniqueQueue('cli-edges');
    const q = ['--redis', redisUrl(), '--queue', name];
    const warning = `rota: warning: no scheduler replica is running for queue "${name}"`;
    const add = await rota([...q, 'periodic', 'add', 'p', 'ping', 'every 1h', '--tz', 'Europe/Paris']);
    expect(add.code).toBe(EXIT_OK);
    expect(add.stderr).toContain(warning);
    const trigger = await rota([...q, 'periodic', 'trigger', 'p']);
    expect(trigger.code).toBe(EXIT_OK);
    expect(trigger.stderr).toContain(warning);

    const tasks = track(new PeriodicTasks(name, { connection: redisUrl() }));
    const scheduler = track(new Scheduler(name, { connection: redisUrl(), id: 'replica-1' }));
    await scheduler.start();
    expect(await tasks.schedulers()).toEqual(['replica-1']);
    const live = await rota([...q, 'periodic', 'trigger', 'p']);
    expect(live).toMatchObject({ code: EXIT_OK, stderr: '' });
    // the triggered runs are submitted, and their times shown in the task's zone
    await eventually(async () => (await tasks.runs('p')).length >= 2);
    expect((await rota([...q, 'periodic', 'runs', 'p'])).stdout).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+\+0[12]:00 +\S+ +waiting/m);
    expect((await rota([...q, 'periodic', 'enable', 'p'])).stderr).toBe('');

    await scheduler.close();
    expect(await tasks.schedulers()).toEqual([]);
    expect((await rota([...q, 'periodic', 'enable', 'p'])).stderr).toContain(warning);
  }, 60_000);
});
