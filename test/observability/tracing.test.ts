/**
 * OpenTelemetry spans against a real Redis, recorded by the SDK's in-memory exporter: a producer
 * span per submit, a consumer span per run linked to it through the trace context the job
 * stores, their attributes, and what a job stores when no tracer is registered or the API is
 * not installed at all.
 */
import { pathToFileURL } from 'node:url';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { unpack } from 'msgpackr';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Job, Queue } from '../../src/index.js';
import { TRACE } from '../../src/queue/job.js';
import { DESCRIPTION } from '../../src/redis/wire.js';
import { NodeProcess } from '../helpers/processes.js';
import { closeAll, eventually, openQueue, openWorker, rawClient, redisUrl, uniqueQueue, until } from '../helpers/setup.js';

afterEach(closeAll);

/** The job's stored description, unpacked: its fields, then its args and trace when it has them. */
async function storedDescription(q: Queue, id: string): Promise<unknown[]> {
  const raw = rawClient();
  try {
    return unpack((await raw.hgetBuffer(q.keys.job(id), 'd'))!) as unknown[];
  } finally {
    raw.disconnect();
  }
}

/** The traceparent of a recorded span. */
const traceparentOf = (s: ReadableSpan) => `00-${s.spanContext().traceId}-${s.spanContext().spanId}-01`;

describe('with a tracer registered', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const contextManager = new AsyncLocalStorageContextManager();
  beforeAll(() => {
    context.setGlobalContextManager(contextManager.enable());
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    trace.disable();
    context.disable();
    await provider.shutdown();
  });
  afterEach(() => exporter.reset());

  const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);

  it('links the run’s consumer span to the submit’s producer span, and runs the handler inside it', async () => {
    const q = openQueue(uniqueQueue('trace'));
    const tracer = trace.getTracer('test');
    const job = await tracer.startActiveSpan('request', async (request) => {
      try {
        return await q.submit({ task: 'send', group: 'acme', args: { to: 'a@b.c' } });
      } finally {
        request.end();
      }
    });
    const [send] = spans(`send ${q.name}`);
    const [request] = spans('request');
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(send.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(send.attributes).toEqual({
      'messaging.system': 'rota',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      'messaging.destination.name': q.name,
      'messaging.message.id': job.id,
      'rota.group': 'acme',
      'rota.task': 'send',
    });
    // The job stores the producer span's context (after its args), and reads it back.
    const stored = await storedDescription(q, job.id);
    expect(stored.slice(DESCRIPTION.length)).toEqual([{ to: 'a@b.c' }, traceparentOf(send)]);
    const read = (await q.getJob(job.id))!;
    expect(read.args).toEqual({ to: 'a@b.c' });
    expect((read as { [TRACE]?: string })[TRACE]).toBe(traceparentOf(send));

    const done: Job[] = [];
    const w = openWorker(q.name, {
      send: () => tracer.startActiveSpan('deliver', (s) => s.end()),
    });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    await eventually(async () => spans(`process ${q.name}`).length === 1);
    const [run] = spans(`process ${q.name}`);
    expect(run.kind).toBe(SpanKind.CONSUMER);
    expect(run.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
    expect(run.links[0].context.traceId).toBe(send.spanContext().traceId);
    expect(run.attributes).toEqual({
      'messaging.system': 'rota',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': q.name,
      'messaging.message.id': job.id,
      'rota.group': 'acme',
      'rota.task': 'send',
      'rota.attempt': 1,
      'rota.outcome': 'success',
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
    const [deliver] = spans('deliver');
    expect(deliver.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
  });

  it('gives each attempt its own span, the failed one marked with its error, all linked to the submit', async () => {
    const q = openQueue(uniqueQueue('trace'));
    const job = await q.submit({ task: 'flaky', maxRetries: 1 });
    let calls = 0;
    const done: Job[] = [];
    const w = openWorker(
      q.name,
      {
        flaky: () => {
          calls += 1;
          if (calls === 1) throw new Error('first try fails');
        },
      },
      { retryDelay: 10 },
    );
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 1);
    await eventually(async () => spans(`process ${q.name}`).length === 2);
    const [send] = spans(`send ${q.name}`);
    const runs = spans(`process ${q.name}`).sort(
      (a, b) => Number(a.attributes['rota.attempt']) - Number(b.attributes['rota.attempt']),
    );
    expect(runs.map((r) => [r.attributes['rota.attempt'], r.attributes['rota.outcome'], r.status.code])).toEqual([
      [1, 'failed', SpanStatusCode.ERROR],
      [2, 'success', SpanStatusCode.UNSET],
    ]);
    expect(runs[0].status.message).toBe('first try fails');
    expect(runs[0].events.map((e) => e.name)).toEqual(['exception']);
    for (const r of runs) {
      expect(r.attributes['messaging.message.id']).toBe(job.id);
      expect(r.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
    }
  });

  it('makes one producer span for a bulk, which every job of it links to', async () => {
    const q = openQueue(uniqueQueue('trace'));
    const jobs = await q.submitBulk([
      { task: 't', group: 'a' },
      { task: 't', group: 'b', args: 2 },
    ]);
    const [send] = spans(`send ${q.name}`);
    expect(send.attributes['messaging.batch.message_count']).toBe(2);
    const done: Job[] = [];
    const w = openWorker(q.name, { t: () => undefined }, { concurrency: 2 });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 2);
    await eventually(async () => spans(`process ${q.name}`).length === 2);
    const runs = spans(`process ${q.name}`);
    expect(runs.map((r) => r.attributes['messaging.message.id']).sort()).toEqual(jobs.map((j) => j.id).sort());
    for (const r of runs) expect(r.links[0].context.spanId).toBe(send.spanContext().spanId);
  });

  it('links a delayed job’s run to its submit, and each fan-out child’s run to its parent’s run', async () => {
    const q = openQueue(uniqueQueue('trace'));
    const parent = await q.submit({ task: 'parent', group: 'p', delay: 300 });
    expect(parent.state).toBe('delayed');
    const [send] = spans(`send ${q.name}`);
    const done: Job[] = [];
    const w = openWorker(
      q.name,
      { parent: (ctx) => ctx.fanOut(['a', 'b'], { task: 'child', group: 'kids' }), child: () => undefined },
      { concurrency: 2 },
    );
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 3);
    await eventually(async () => spans(`process ${q.name}`).length === 3);
    const runs = spans(`process ${q.name}`);
    const byId = new Map(runs.map((r) => [r.attributes['messaging.message.id'], r]));
    const parentRun = byId.get(parent.id)!;
    expect(parentRun.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
    for (const i of [0, 1]) {
      const child = byId.get(`${parent.id}/${i}`)!;
      expect(child.attributes).toMatchObject({ 'rota.group': 'kids', 'rota.task': 'child', 'rota.outcome': 'success' });
      expect(child.links.map((l) => l.context.spanId)).toEqual([parentRun.spanContext().spanId]);
      expect(child.links[0].context.traceId).toBe(parentRun.spanContext().traceId);
    }
  });

  it('ends a failed submit’s span with its error', async () => {
    const q = openQueue(uniqueQueue('trace'));
    const raw = rawClient();
    try {
      // An id reserved for a staged periodic occurrence refuses the submit after its span began.
      await raw.hset(q.keys.job('reserved'), 'state', 'planned');
      await expect(q.submit({ task: 't', id: 'reserved' })).rejects.toThrow(/reserved/);
    } finally {
      raw.disconnect();
    }
    const [send] = spans(`send ${q.name}`);
    expect(send.status.code).toBe(SpanStatusCode.ERROR);
  });
});

// (after the tests above: a provider removed is no longer used)
describe('without a tracer', () => {
  it('stores no trace context: a job’s description is what it was', async () => {
    const q = openQueue(uniqueQueue('untraced'));
    const [plain, withArgs] = await q.submitBulk([{ task: 't' }, { task: 't', args: [1] }]);
    expect(await storedDescription(q, plain.id)).toHaveLength(DESCRIPTION.length);
    expect((await storedDescription(q, withArgs.id)).slice(DESCRIPTION.length)).toEqual([[1]]);
    const done: Job[] = [];
    const w = openWorker(q.name, { t: () => 'ok' });
    w.on('completed', (j) => done.push(j));
    await until(w, 'completed', () => done.length === 2);
  });

  it('works when @opentelemetry/api is not installed', async () => {
    const hook = pathToFileURL(new URL('../fixtures/without-otel.mjs', import.meta.url).pathname).href;
    const child = new NodeProcess(
      new URL('../fixtures/untraced.ts', import.meta.url).pathname,
      [redisUrl(), uniqueQueue('no-otel')],
      { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${hook}` },
    );
    try {
      const report = await child.waitFor<{ tracingAvailable: boolean; result: number }>((m) => 'result' in m, 30_000);
      expect(report).toMatchObject({ tracingAvailable: false, result: 42 });
      expect(await child.exited).toBe(0);
    } finally {
      await child.kill();
    }
  });
});
