/**
 * Isolated tasks under faults, in real worker threads and child processes (@full-suite: it
 * kills processes): each crash kind fails only its attempt (retried as usual) and its thread or
 * process is replaced; a memory limit hit does the same; a handler that ignores its aborted
 * signal (cancel, timebox) is ended with its thread or process after the grace period, and the
 * run's log and error say why; close() drains busy isolated handlers, or releases them and ends
 * the pool at its timeout.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isolated, type Job, type Worker } from '../../src/index.js';
import { closeAll, eventually, openQueue, openWorker, uniqueQueue, until } from '../helpers/setup.js';

const TASKS = new URL('../fixtures/isolated/tasks.ts', import.meta.url);

afterEach(closeAll);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The pid the crash task logged first. */
async function loggedPid(q: ReturnType<typeof openQueue>, id: string): Promise<number> {
  // (each line stored begins with its time)
  const pid = await eventually(async () => (await q.jobLogs(id)).map((l) => / pid (\d+)$/.exec(l)?.[1]).find(Boolean), 20_000);
  return Number(pid);
}

type Kind = { how: string; cause: string; error: RegExp; in: 'thread' | 'process'; memoryLimitMb?: number };
const KINDS: Kind[] = [
  { in: 'thread', how: 'uncaught', cause: 'crash', error: /uncaught exception or unhandled rejection: Error: thrown outside/ },
  {
    in: 'thread',
    how: 'unhandled',
    cause: 'crash',
    error: /uncaught exception or unhandled rejection: .*a promise nobody awaited/,
  },
  { in: 'thread', how: 'exit', cause: 'exit', error: /exited with code 3/ },
  { in: 'thread', how: 'oom', cause: 'oom', memoryLimitMb: 32, error: /ran out of memory \(its limit: 32 MB of heap\)/ },
  { in: 'process', how: 'uncaught', cause: 'crash', error: /uncaught exception: Error: thrown outside the handler/ },
  { in: 'process', how: 'unhandled', cause: 'crash', error: /unhandled rejection: Error: a promise nobody awaited/ },
  { in: 'process', how: 'exit', cause: 'exit', error: /exited with code 3/ },
  { in: 'process', how: 'abort', cause: 'crash', error: /ended by signal SIGABRT \(a native crash, or process\.abort\(\)\)/ },
  { in: 'process', how: 'sleep-forever', cause: 'killed', error: /was killed \(SIGKILL/ },
  { in: 'process', how: 'oom', cause: 'oom', memoryLimitMb: 64, error: /ran out of memory \(its limit: 64 MB of heap\)/ },
];

describe('a crash in an isolated handler', () => {
  it.each(KINDS)('($in, $how) fails only that attempt, retried, and its $in is replaced', async (k) => {
    const name = uniqueQueue(`iso-crash-${k.in}-${k.how}`);
    const q = openQueue(name);
    const w = openWorker(
      name,
      { crash: isolated(TASKS, { in: k.in, memoryLimitMb: k.memoryLimitMb }), noop: () => 'ok' },
      { concurrency: 2, retryDelay: 60_000 },
    );
    const stuck: Array<[Job, Error]> = [];
    w.on('stuck', (j, e) => stuck.push([j, e]));
    const job = await q.submit({ task: 'crash', args: { how: k.how }, maxRetries: 1 });
    const pid = await loggedPid(q, job.id);
    if (k.how === 'sleep-forever') process.kill(pid, 'SIGKILL');
    await until(w, 'stuck', () => stuck.length > 0, 40_000);
    const j = await q.getJob(job.id);
    expect(j).toMatchObject({ state: 'stuck', retries: 1 });
    expect(j?.error).toMatch(/^IsolateError: the (thread|process \d+) of task "crash" /);
    expect(j?.error).toMatch(k.error);
    expect(stuck[0][1]).toMatchObject({ name: 'IsolateError', reason: k.cause });
    await eventually(async () => w.poolStats().find((p) => p.task === 'crash')?.restarts[k.cause as 'crash'] === 1);
    if (k.in === 'process') expect(alive(pid)).toBe(false);
    // the executor lives on: its other task, and a new member of this one's pool
    const other = await q.submit({ task: 'noop' });
    await eventually(async () => (await q.getJob(other.id))?.state === 'success', 20_000);
    const again = await q.submit({ task: 'crash', args: { how: 'sleep-forever' } });
    const next = await loggedPid(q, again.id);
    if (k.in === 'process') expect(next).not.toBe(pid);
    expect(w.health().live).toBe(true);
    // (that run never ends: released at once)
    await w.close({ timeout: 0 });
  });
});

/** A worker with the stubborn (signal-ignoring) and polite tasks in `where`, grace 300 ms. */
function signalWorker(name: string, where: 'thread' | 'process'): Worker {
  return openWorker(
    name,
    { stubborn: isolated(TASKS, { in: where }), polite: isolated(TASKS, { in: where }) },
    { concurrency: 2, graceMs: 300 },
  );
}

describe.each(['thread', 'process'] as const)('an isolated handler in a %s and its signal', (where) => {
  const what = where === 'thread' ? /its thread was terminated/ : /its process \(\d+\) was killed/;

  it('ends cancelled when it honours a cancel; one that ignores it is ended after the grace period, its log says why', async () => {
    const name = uniqueQueue(`iso-cancel-${where}`);
    const q = openQueue(name);
    const w = signalWorker(name, where);
    const running = (id: string) => eventually(async () => (await q.getJob(id))?.state === 'running', 20_000);
    const polite = await q.submit({ task: 'polite' });
    await running(polite.id);
    await q.cancel(polite.id);
    await eventually(async () => (await q.getJob(polite.id))?.state === 'cancelled', 20_000);
    expect(w.poolStats().find((p) => p.task === 'polite')?.restarts.abandoned).toBeUndefined();

    const stubborn = await q.submit({ task: 'stubborn', args: { ms: 120_000 } });
    await running(stubborn.id);
    await q.cancel(stubborn.id);
    await eventually(async () => (await q.getJob(stubborn.id))?.state === 'cancelled', 20_000);
    const logs = (await q.jobLogs(stubborn.id)).join('\n');
    expect(logs).toMatch(/rota: the handler ignored its aborted signal for 300 ms: /);
    expect(logs).toMatch(what);
    await eventually(async () => w.poolStats().find((p) => p.task === 'stubborn')?.restarts.abandoned === 1);
  });

  it('fails timed out at its maxRuntime when it ignores the timebox, the error saying it was ended', async () => {
    const name = uniqueQueue(`iso-timebox-${where}`);
    const q = openQueue(name);
    const w = signalWorker(name, where);
    const failed: Job[] = [];
    w.on('failed', (j) => failed.push(j));
    const job = await q.submit({ task: 'stubborn', args: { ms: 120_000 }, maxRuntime: 500 });
    await until(w, 'failed', () => failed.length > 0, 30_000);
    const j = await q.getJob(job.id);
    expect(j?.state).toBe('failed');
    expect(j?.error).toMatch(
      /^TimeoutError: timed out: ran longer than its maxRuntime of 500 ms; the handler ignored its aborted signal/,
    );
    expect(j?.error).toMatch(what);
    // the next run gets a new member
    const next = await q.submit({ task: 'stubborn', args: { ms: 0 } });
    await eventually(async () => (await q.getJob(next.id))?.state === 'success', 20_000);
  });

  it('close() lets busy isolated handlers finish, then ends the pool; at its timeout releases them and ends it', async () => {
    const name = uniqueQueue(`iso-close-${where}`);
    const q = openQueue(name);
    const w = signalWorker(name, where);
    const a = await q.submit({ task: 'stubborn', args: { ms: 6000 } });
    const b = await q.submit({ task: 'stubborn', args: { ms: 6000 } });
    await eventually(async () => w.running === 2 && w.poolStats()[0].busy === 2, 20_000);
    await w.close({ timeout: 30_000 });
    expect((await q.getJob(a.id))?.state).toBe('success');
    expect((await q.getJob(b.id))?.state).toBe('success');
    expect(w.poolStats().every((p) => p.size === 0 && p.busy === 0)).toBe(true);

    const w2 = signalWorker(name, where);
    const c = await q.submit({ task: 'stubborn', args: { ms: 120_000 } });
    await eventually(async () => w2.poolStats()[0].busy === 1, 20_000);
    await w2.close({ timeout: 200 });
    const cj = await q.getJob(c.id);
    expect(cj).toMatchObject({ state: 'waiting', retries: 0 });
    expect(w2.poolStats().every((p) => p.size === 0 && p.busy === 0)).toBe(true);
    expect(w2.poolStats()[0].restarts).toEqual({});
  });
});
