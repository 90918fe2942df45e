/**
 * Schedule controls where users see them (issue 43): the dashboard's periodic list and task page
 * (over HTTP) show a task's controls, its ended state and each run's due time beside its
 * occurrence; the CLI's `periodic add` takes the controls as flags, `periodic list` shows an
 * ended task and `periodic runs` a DUE column.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHandler, dashboard } from '../../src/dashboard/index.js';
import { PeriodicTasks, Queue, Scheduler } from '../../src/index.js';
import { jitterOffset } from '../../src/periodic/jitter.js';
import { rota } from '../helpers/cli.js';
import { closeAll, eventually, redisUrl, track, uniqueQueue } from '../helpers/setup.js';

const ms = (iso: string) => Date.parse(iso);
const utc = (t: number) => `${new Date(t).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
const name = uniqueQueue('views');
const occ = ms('2026-06-01T01:00:00Z');
const JITTER = 600_000;
const due = occ + jitterOffset('jit', occ, JITTER);
let handler: DashboardHandler;
let app: Server;
let base: string;

beforeAll(async () => {
  const tasks = track(new PeriodicTasks(name, { connection: redisUrl(), now: () => ms('2026-06-01T00:30:00Z') }));
  const queue = track(new Queue(name, { connection: redisUrl() }));
  await tasks.upsert({ id: 'jit', task: 'noop', timer: '*:00', jitter: JITTER, exclude: ['*-12-25'] });
  await tasks.upsert({ id: 'fin', task: 'noop', timer: '*:00', endAt: occ, overlap: 'allow' });
  // a replica at the due time: both tasks' 01:00 occurrences run, and `fin` ends
  const s = track(new Scheduler(name, { connection: redisUrl(), now: () => due, misfireGraceMs: 3_600_000 }));
  await s.start();
  await eventually(async () => (await queue.getJob(`jit@${occ}`)) && (await tasks.get('fin'))?.ended);
  handler = dashboard({ connection: redisUrl(), queues: [name] });
  app = createServer((req, res) => handler(req, res));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await handler?.close();
  app?.closeAllConnections();
  await new Promise((r) => app?.close(r));
  await closeAll();
});

describe('schedule controls on the dashboard', () => {
  it('the list shows each task controls and an ended task as ended', async () => {
    const body = await (await fetch(`${base}/periodic`)).text();
    const row = (id: string) => new RegExp(`<tr data-task="${id}">[\\s\\S]*?</tr>`).exec(body)![0];
    expect(row('jit')).toContain(`exclude *-12-25; jitter ${JITTER} ms`);
    expect(row('jit')).not.toContain('status-ended');
    expect(row('fin')).toContain(`until ${new Date(occ).toISOString()}`);
    expect(row('fin')).toContain('<span class="status status-ended">ended</span>');
  });

  it("the task page shows its controls, and each run's occurrence and due time", async () => {
    const body = await (await fetch(`${base}/periodic/jit`)).text();
    expect(body).toContain(`<tr><th>schedule controls</th><td class="controls">exclude *-12-25; jitter ${JITTER} ms</td></tr>`);
    expect(body).toContain('<th>planned</th><th>due</th>');
    // (its history in the task's zone, named in the heading)
    expect(body).toContain(`<td>${utc(occ).slice(0, 19)}</td><td>${utc(due).slice(0, 19)}</td>`);
    const ended = await (await fetch(`${base}/periodic/fin`)).text();
    expect(ended).toMatch(/<h1>Periodic task <span class="mono">fin<\/span> .*ended<\/span><\/h1>/);
  });
});

describe('schedule controls in the CLI', () => {
  const q = () => ['--redis', redisUrl(), '--queue', name];
  it('periodic add takes them as flags; list shows an ended task; runs shows the due time', async () => {
    const add = await rota([
      ...q(),
      'periodic',
      'add',
      'flags',
      'noop',
      '*:00',
      '--also',
      '*:30',
      '--exclude',
      'Sun',
      '--exclude',
      '2030-12-24..2030-12-26',
      '--start-at',
      '2030-01-01T00:00:00Z',
      '--end-at',
      '2030-02-01T00:00:00Z',
      '--limit',
      '5',
      '--immediately',
      '--jitter',
      '1000',
      '--json',
    ]);
    expect(add.stderr).not.toMatch(/error/i);
    expect(JSON.parse(add.stdout)).toMatchObject({
      timer: ['*:00', '*:30'],
      exclude: ['Sun', '2030-12-24..2030-12-26'],
      startAt: ms('2030-01-01T00:00:00Z'),
      endAt: ms('2030-02-01T00:00:00Z'),
      limit: 5,
      immediately: true,
      jitter: 1000,
      nextrun: ms('2030-01-01T00:00:00Z'),
      ended: false,
    });
    const refused = await rota([...q(), 'periodic', 'add', 'bad', 'noop', '*:00', '--exclude', '*-12-25 10:00']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/exclude/);

    const list = await rota([...q(), 'periodic', 'list']);
    const line = (id: string) => list.stdout.split('\n').find((l) => l.startsWith(`${id} `))!;
    expect(line('fin')).toMatch(/\bended\b/);
    expect(line('jit')).toMatch(/\byes\b/);
    expect(line('flags')).toContain('*:00 | *:30 (exclude Sun, 2030-12-24..2030-12-26; from 2030-01-01T00:00:00.000Z;');

    const runs = await rota([...q(), 'periodic', 'runs', 'jit']);
    expect(runs.stdout.split('\n')[0]).toMatch(/^PLANNED\s+DUE\s+STATUS/);
    expect(runs.stdout).toContain(`${new Date(occ).toISOString()}  ${new Date(due).toISOString()}`);
  });
});
