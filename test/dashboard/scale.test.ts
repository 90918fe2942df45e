/**
 * The Redis work of each dashboard page at 100,000 groups and 1,000,000 jobs, with hostile
 * parameters (a deep `start`, a made-up cursor, a huge `limit` or `offset`, a filter that matches
 * nothing): every request must do bounded work. The work is counted by Redis itself: the calls of
 * `INFO commandstats` during the request (the commands a script sends are counted too), not by
 * time. Each command the dashboard sends reads a bounded range (a chunk of 200, an HSCAN of 100,
 * a page of 500 groups at most), so a bound on the commands bounds the work.
 *
 * The queue is filled through its store layout by a Lua script (a real submit of a million jobs
 * would take minutes): a job hash as submit writes it (description, group, state, submitted),
 * the group lists, the `groups` records and the counts; the finished and delayed sets as the
 * finish and delay paths write them. A first job is submitted through `Queue` for the queue's
 * meta record and a real description.
 *
 * @full-suite: filling a million jobs takes a while, so `npm run test:quick` leaves this file out.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHandler, dashboard } from '../../src/dashboard/index.js';
import { MAX_READ } from '../../src/dashboard/views/jobs.js';
import { PeriodicTasks } from '../../src/periodic/tasks.js';
import { Queue } from '../../src/queue/queue.js';
import { GROUP_FIELDS } from '../../src/redis/wire.js';
import { privateRedis } from '../helpers/setup.js';

const GROUPS = 100_000;
const WAITING = 900_000;
/** Waiting jobs of group `big` (the rest spread over the other groups). */
const BIG = 100_000;
const FAILED = 50_000;
const SUCCEEDED = 40_000;
const DELAYED = 10_000;
/** Jobs written per script call (a call of the fill stays well under a second). */
const BATCH = 50_000;

/**
 * Writes jobs `from`..`to`-1 (ids `j<n>`) through the store layout. Job n < WAITING waits: in
 * group `big` for n < BIG, else in group g<n mod (GROUPS-1)>; the rest are failed, succeeded and
 * delayed in turn, in the groups of the waiting ones.
 */
const FILL = `
local prefix, from, to, groups, d, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local waiting, big, failed, succeeded = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local counts = {}
for n = from, to - 1 do
  local id = 'j' .. n
  local group = n < big and 'big' or ('g' .. (n % (groups - 1)))
  local state
  if n < waiting then
    state = 'waiting'
    redis.call('LPUSH', prefix .. 'g:' .. group .. ':l', id)
  elseif n < waiting + failed then
    state = 'failed'
    redis.call('ZADD', prefix .. 'done:failed', now - n, id)
  elseif n < waiting + failed + succeeded then
    state = 'success'
    redis.call('ZADD', prefix .. 'done:success', now - n, id)
  else
    state = 'delayed'
    redis.call('ZADD', prefix .. 'delayed', now + n, id)
  end
  redis.call('HSET', prefix .. 'j:' .. id, 'd', d, 'group', group, 'state', state, 'submitted', now - n)
  counts[state] = (counts[state] or 0) + 1
end
for state, c in pairs(counts) do redis.call('HINCRBY', prefix .. 'counts', state, c) end
return 1
`;

/** Writes every group's record: its waiting jobs in the low list (nl), default settings. */
const GROUP_RECORDS = `
local prefix, from, to, groups, waiting, big, nlAt, weightAt, width = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local function record(nl)
  local parts = {}
  for i = 1, width do
    local v = 0
    if i == nlAt then v = nl elseif i == weightAt then v = 1 end
    parts[i] = struct.pack('<i4', v)
  end
  return table.concat(parts)
end
for k = from, to - 1 do
  local name = 'g' .. k
  local nl = redis.call('LLEN', prefix .. 'g:' .. name .. ':l')
  redis.call('HSET', prefix .. 'groups', name, record(nl))
end
if from == 0 then redis.call('HSET', prefix .. 'groups', 'big', record(redis.call('LLEN', prefix .. 'g:big:l'))) end
return 1
`;

const redis = privateRedis();

/** Commands Redis ran during `fn` (INFO commandstats), less those of the measuring itself. */
async function commandsDuring(fn: () => Promise<unknown>): Promise<{ total: number; by: Record<string, number> }> {
  await redis.admin.config('RESETSTAT');
  await fn();
  const info = await redis.admin.info('commandstats');
  const by: Record<string, number> = {};
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] === 'info' || m[1] === 'config|resetstat') continue;
    by[m[1]] = Number(m[2]);
    total += Number(m[2]);
  }
  return { total, by };
}

describe('dashboard at 100,000 groups and 1,000,000 jobs', () => {
  const name = 'scale';
  let queue: Queue;
  let tasks: PeriodicTasks;
  let handler: DashboardHandler;
  let app: Server;
  let base: string;

  beforeAll(async () => {
    queue = new Queue(name, { connection: redis.server.url });
    const first = await queue.submit({ task: 'mail', group: 'g0', args: { to: 'someone@example.com' } });
    const prefix = `{rota:${name}}:`;
    const d = await redis.admin.hgetBuffer(`${prefix}j:${first.id}`, 'd');
    const now = Date.now();
    for (let from = 0; from < WAITING + FAILED + SUCCEEDED + DELAYED; from += BATCH) {
      await redis.admin.eval(FILL, 0, prefix, from, from + BATCH, GROUPS, d!, now, WAITING, BIG, FAILED, SUCCEEDED);
    }
    const width = GROUP_FIELDS.length;
    for (let from = 0; from < GROUPS - 1; from += BATCH) {
      await redis.admin.eval(
        GROUP_RECORDS,
        0,
        prefix,
        from,
        Math.min(GROUPS - 1, from + BATCH),
        GROUPS,
        WAITING,
        BIG,
        GROUP_FIELDS.indexOf('nl') + 1,
        GROUP_FIELDS.indexOf('weight') + 1,
        width,
      );
    }
    // A periodic task with a long run history (its runs: the failed jobs).
    tasks = new PeriodicTasks(name, { connection: redis.server.url });
    await tasks.upsert({ id: 'nightly', task: 'mail', timer: '*-*-* 04:00' });
    for (let n = 0; n < 20_000; n += 5000) {
      const entries = Array.from({ length: 5000 }, (_, k) => [now - (n + k) * 1000, `j${WAITING + n + k}`]).flat();
      await redis.admin.zadd(`${prefix}p:h:nightly`, ...entries);
    }
    expect(await redis.admin.hlen(`${prefix}groups`)).toBeGreaterThanOrEqual(GROUPS);
    expect(await redis.admin.dbsize()).toBeGreaterThan(WAITING + FAILED + SUCCEEDED + DELAYED);

    handler = dashboard({ connection: redis.server.url, queues: [name] });
    app = createServer(handler);
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    // The group index loads in the background: the first groups page waits for it. Then the
    // reader's own ticks stop, so that the counts below are the requests' (a request still reads
    // a tick when the last is old: that is the request's work, and bounded too).
    expect((await fetch(`${base}/groups`)).status).toBe(200);
    handler.reader.close();
  }, 300_000);

  afterAll(async () => {
    await handler?.close();
    if (app) {
      app.closeAllConnections();
      await new Promise((r) => app.close(r));
    }
    await queue?.close();
    await tasks?.close();
  });

  // Most commands any request may send: the job list's bound (a command per candidate looked
  // at, and as many to walk the groups and lists), a groups page of 500 groups (a few reads a
  // group), and a tick.
  const MOST_COMMANDS = 3 * MAX_READ + 1000;

  it.each([
    '/jobs?state=waiting&start=1e15',
    '/jobs?state=waiting&start=999999999999999',
    '/jobs?state=waiting&start=9999999999999999999-999999999999999-999999999999999',
    '/jobs?state=waiting&task=nothing&limit=1000000000',
    '/jobs?state=waiting&group=big&start=999999999999999',
    '/jobs?state=waiting&group=big&task=nothing&limit=1e9',
    '/jobs?state=waiting&group=nothing',
    '/jobs?state=failed&start=1e15&limit=1e9',
    '/jobs?state=failed&task=nothing',
    '/jobs?state=success&start=999999999999999',
    '/jobs?state=delayed&task=nothing&limit=1e9',
    '/jobs?state=stuck',
    '/jobs?state=running&start=1e15',
    '/jobs?state=nonsense&start=1e15',
    '/groups?offset=1e15&limit=1e9',
    '/groups?limit=1e9&sort=oldest',
    '/groups?limit=500&sort=waiting&dir=asc',
    '/groups?group=big',
    '/?limit=1e9',
    '/executors?limit=1e9',
    '/periodic',
    '/periodic/nothing?runs=1e9',
    '/periodic/nightly?runs=1e9',
    '/periodic/nightly?runs=5000',
    '/jobs/j0',
    '/api/tick',
  ])('GET %s does bounded Redis work', async (path) => {
    let status = 0;
    const { total, by } = await commandsDuring(async () => {
      const r = await fetch(`${base}${path}`);
      status = r.status;
      await r.text();
    });
    expect(status, path).toBeLessThan(500);
    expect(total, `${path}: ${JSON.stringify(by)}`).toBeLessThanOrEqual(MOST_COMMANDS);
  });

  it("keeps an open page's live updates of a hostile view bounded", async () => {
    // A dashboard of its own, whose reader runs: a page open on the view, then a job submitted
    // (a new event), so that the reader renders the view again for the page's stream.
    const live = dashboard({ connection: redis.server.url, queues: [name] });
    const server = createServer(live);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const abort = new AbortController();
    try {
      const view = '/jobs?state=waiting&start=1e15';
      const port = (server.address() as AddressInfo).port;
      const res = await fetch(`http://127.0.0.1:${port}/live?view=${encodeURIComponent(view)}`, { signal: abort.signal });
      const reader = res.body!.getReader();
      let text = '';
      const next = async (what: string) => {
        while (!text.includes(what)) text += new TextDecoder().decode((await reader.read()).value);
      };
      await next('event: tick');
      // The commands of the job lists (the ticks, the submit and the group index send others).
      const { by } = await commandsDuring(async () => {
        await queue.submit({ task: 'mail', group: 'g1' });
        await next('event: view');
      });
      const listReads = (by.llen ?? 0) + (by.lrange ?? 0) + (by.hmget ?? 0);
      expect(listReads, JSON.stringify(by)).toBeLessThanOrEqual(MOST_COMMANDS);
    } finally {
      abort.abort();
      await live.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('pages the waiting jobs of every group deep at the cost of a page each, every job once', async () => {
    // (50 pages of 500: a page that passed over the groups before its place would send a
    // command per list of each, some 8,000 commands at the last page)
    let path = '/jobs?state=waiting&limit=500';
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      let body = '';
      const { total } = await commandsDuring(async () => {
        body = await (await fetch(`${base}${path}`)).text();
      });
      expect(total).toBeLessThanOrEqual(MOST_COMMANDS);
      const ids = [...body.matchAll(/<tr><td class="mono"><a href="\/jobs\/([^"]+)">/g)].map((m) => m[1]);
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) {
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
      path = /<a href="([^"]+)">next →/.exec(body)![1].replace(/&amp;/g, '&');
    }
    expect(seen.size).toBe(50 * 500);
  });
});
