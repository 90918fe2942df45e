/**
 * Compile-time checks of typed task maps, checked by `npm run typecheck` (tsc --noEmit -p .,
 * which includes test/): each `@ts-expect-error` line must fail to compile (tsc reports an unused
 * one), and each `expectTypeOf` must hold. Nothing here runs; the queue is never connected.
 */
import { expectTypeOf } from 'vitest';
import {
  type ChildCounts,
  installShutdownHandlers,
  type Job,
  type Queue,
  type SubmitSpec,
  serveMetrics,
  Worker,
} from '../../src/index.js';

type Tasks = { send: { to: string }; ping: undefined };
declare const connection: string;

export async function typedQueue(queue: Queue<Tasks>): Promise<void> {
  const job = await queue.submit({ task: 'send', args: { to: 'a@b.c' }, group: 'acme' });
  expectTypeOf(job.args).toEqualTypeOf<{ to: string }>();
  expectTypeOf(job.task).toEqualTypeOf<'send'>();
  await queue.submit({ task: 'ping' });

  // @ts-expect-error a task the map does not name
  await queue.submit({ task: 'sned', args: { to: 'a@b.c' } });
  // @ts-expect-error args of another type
  await queue.submit({ task: 'send', args: { to: 42 } });
  // @ts-expect-error args the task needs are missing
  await queue.submit({ task: 'send' });
  // @ts-expect-error an args field the task does not have
  await queue.submit({ task: 'send', args: { to: 'a@b.c', cc: 'x' } });
  await queue.submitBulk([
    { task: 'send', args: { to: 'a' } },
    // @ts-expect-error one bad spec in a bulk
    { task: 'send', args: { to: 1 } },
  ]);
  await queue.submitBulk([{ task: 'send', args: { to: 'a' } }, { task: 'ping' }]);

  // batches: callbacks and jobs typed with the map
  const batch = await queue.openBatch({ onComplete: { task: 'send', args: { to: 'ops' } }, onSuccess: { task: 'ping' } });
  // @ts-expect-error a callback task the map does not name
  await queue.openBatch({ onComplete: { task: 'sned' } });
  // @ts-expect-error a callback's args of another type
  await queue.openBatch({ onSuccess: { task: 'send', args: { to: 1 } } });
  const added = await batch.submit({ task: 'send', args: { to: 'a' } });
  expectTypeOf(added.args).toEqualTypeOf<{ to: string }>();
  // @ts-expect-error a batch job's args of another type
  await batch.submit({ task: 'send', args: { to: 2 } });
  await batch.submitBulk([{ task: 'ping' }, { task: 'send', args: { to: 'b' } }]);

  // A due time goes with any task: a delay in ms, or runAt as a Date or ms.
  const later = await queue.submit({ task: 'send', args: { to: 'a' }, delay: 30_000 });
  expectTypeOf(later.runAt).toEqualTypeOf<number | undefined>();
  await queue.submit({ task: 'ping', runAt: new Date('2030-01-01T00:00:00Z') });
  await queue.submitBulk([
    { task: 'send', args: { to: 'a' }, runAt: Date.now() + 60_000 },
    { task: 'ping', delay: 5 },
  ]);
  // @ts-expect-error runAt is a Date or ms, not a string
  await queue.submit({ task: 'ping', runAt: '2030-01-01' });
  // @ts-expect-error a delay is ms, not a duration string
  await queue.submit({ task: 'ping', delay: '30s' });
}

export function typedWorker(): void {
  new Worker<Tasks>(
    'mail',
    {
      send: async ({ args, job, progress, fanOut }) => {
        expectTypeOf(args).toEqualTypeOf<{ to: string }>();
        expectTypeOf(job.args).toEqualTypeOf<{ to: string }>();
        progress(50);
        // @ts-expect-error progress is a number
        progress('half');
        // fanOut names a task of the map, and its items are that task's args
        await fanOut([{ to: 'a' }, { to: 'b' }], { task: 'send', group: 'acme' });
        await fanOut([undefined], { task: 'ping' });
        // @ts-expect-error a task the map does not name
        await fanOut([{ to: 'a' }], { task: 'sned' });
        // @ts-expect-error items of another task's type
        await fanOut([{ to: 1 }], { task: 'send' });
        return args.to.length;
      },
    },
    { connection },
  );
  new Worker<Tasks>(
    'mail',
    {
      // @ts-expect-error a handler of a task the map does not name
      sned: async () => undefined,
    },
    { connection },
  );
  new Worker<Tasks>(
    'mail',
    {
      // @ts-expect-error a handler reading args the task does not have
      send: async ({ args }) => args.cc,
    },
    { connection },
  );
}

export async function untyped(queue: Queue, spec: SubmitSpec): Promise<void> {
  // Untyped use stays as it was: any task name, args typed by what is passed.
  const job = await queue.submit({ task: 'anything', args: { n: 1 } });
  expectTypeOf(job.args).toEqualTypeOf<{ n: number }>();
  expectTypeOf(job).toEqualTypeOf<Job<{ n: number }>>();
  await queue.submit(spec);
  await queue.submitBulk([{ task: 'a' }, { task: 'b', args: 2 }]);
  new Worker('mail', { anything: async ({ args }) => args }, { connection });
  // Untyped executors fan out to any task, with any items.
  new Worker(
    'mail',
    {
      parent: async ({ fanOut, progress }) => {
        progress(1);
        await fanOut([1, 'two', { three: 3 }], { task: 'child', priority: 'high' });
      },
    },
    { connection },
  );
}

export function jobShape(job: Job): void {
  // The fields a job read back has: pid is a number, host and pid are there (runs of periodic tasks).
  expectTypeOf(job.pid).toEqualTypeOf<number | undefined>();
  expectTypeOf(job.host).toEqualTypeOf<string | undefined>();
  // A delayed job's due time, and a fan-out parent's children by state.
  expectTypeOf(job.runAt).toEqualTypeOf<number | undefined>();
  expectTypeOf(job.children).toEqualTypeOf<ChildCounts | undefined>();
}

export function internalFields(queue: Queue): void {
  // @ts-expect-error tracker is set by the scheduler only
  void queue.submit({ task: 't', tracker: 'nightly' });
  // @ts-expect-error occurrence is set by the scheduler only
  void queue.submit({ task: 't', occurrence: 1 });
}

export function typedPartsFitRotasOwn(queue: Queue<Tasks>, worker: Worker<Tasks>): void {
  // A typed queue or executor goes where Rota takes one (metrics, shutdown handlers); an
  // executor is an executor whatever its map, but a typed queue is no untyped one: it takes
  // fewer submits.
  const w: Worker = worker;
  installShutdownHandlers(worker);
  void serveMetrics({ port: 0, queue, workers: [worker, w] });
  // @ts-expect-error a Queue<Tasks> cannot stand for a Queue, which takes any task
  const q: Queue = queue;
  void q;
}
