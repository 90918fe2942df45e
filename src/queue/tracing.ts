/**
 * OpenTelemetry spans, through `@opentelemetry/api` when the application has it installed (an
 * optional peer dependency, imported here if present): a producer span per submit and a consumer
 * span per run, linked by the submit's trace context, which the job stores (only when a tracer
 * made one). Names and attributes follow OpenTelemetry's messaging conventions
 * (`send <queue>`, `process <queue>`, messaging.system = 'rota').
 *
 * Without the package, or with no tracer provider registered, no span is started and nothing is
 * stored; a job costs a look-up of the global provider (benchmarks/probes/tracing-cost.ts).
 */
import { createRequire } from 'node:module';
import type * as OTel from '@opentelemetry/api';

/**
 * The OpenTelemetry API, or null when it is not installed. Loaded with require (the package is
 * CommonJS, and its global provider is shared by every copy), not a top-level await, which would
 * make Rota impossible to require() from CommonJS.
 */
const api: typeof OTel | null = (() => {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as typeof OTel;
  } catch {
    return null;
  }
})();

/** What the API's global provider delegates to while no tracer provider is registered. */
const NO_PROVIDER = api ? new api.ProxyTracerProvider().getDelegate() : undefined;

/**
 * The tracer of the registered tracer provider, or null when none is registered: looked up per
 * span, so that a provider registered (or removed) later counts, and so that an application
 * without one pays a lookup and no span.
 */
function registeredTracer(): OTel.Tracer | null {
  if (!api) return null;
  const provider = api.trace.getTracerProvider();
  if (provider instanceof api.ProxyTracerProvider && provider.getDelegate() === NO_PROVIDER) return null;
  return provider.getTracer('rota');
}

/** The W3C traceparent of a span context: version, trace id, span id, flags. */
function traceparent(c: OTel.SpanContext): string {
  return `00-${c.traceId}-${c.spanId}-${c.traceFlags < 16 ? '0' : ''}${c.traceFlags.toString(16)}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context a stored traceparent stands for, or null when it is not one. */
function parseTraceparent(text: string): OTel.SpanContext | null {
  const m = TRACEPARENT.exec(text);
  return m ? { traceId: m[1], spanId: m[2], traceFlags: Number.parseInt(m[3], 16), isRemote: true } : null;
}

/** A submit's producer span, and the trace context its jobs store. */
export interface SubmitSpan {
  /** The traceparent the submitted jobs store. */
  readonly trace: string;
  /** Ends the span: the submit was written, or failed with `error`. */
  end(error?: unknown): void;
}

/** What a producer span describes: the queue, and its jobs' ids, groups and tasks. */
interface Submitted {
  id?: string;
  group: string;
  task: string;
}

/**
 * Starts the producer span of a submit of `jobs` (one, or a bulk) to `queue`, or answers null
 * when no tracer is registered (the span would record nothing and carry no trace).
 */
export function startSubmitSpan(queue: string, jobs: readonly Submitted[]): SubmitSpan | null {
  const tracer = registeredTracer();
  if (!tracer) return null;
  const one = jobs.length === 1 ? jobs[0] : undefined;
  const attributes: OTel.Attributes = {
    'messaging.system': 'rota',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': queue,
  };
  if (one) {
    attributes['messaging.message.id'] = one.id;
    attributes['rota.group'] = one.group;
    attributes['rota.task'] = one.task;
  } else {
    attributes['messaging.batch.message_count'] = jobs.length;
  }
  const span = tracer.startSpan(`send ${queue}`, { kind: api!.SpanKind.PRODUCER, attributes });
  const context = span.spanContext();
  if (!api!.isSpanContextValid(context)) return null;
  return {
    trace: traceparent(context),
    end(error?: unknown) {
      if (error !== undefined) failed(span, error);
      span.end();
    },
  };
}

/** Whether the OpenTelemetry API is installed (else no span is ever started). */
export const tracingAvailable = api !== null;

/** What a run's consumer span describes. */
interface Running {
  id: string;
  group: string;
  task: string;
  retries: number;
}

/** A run's consumer span. */
export interface RunSpan {
  /** The traceparent of the span: what the children of the run's fan-out store, so that their runs link to it. */
  readonly trace: string;
  /** Calls `fn` with the span as the active one, so that the handler's own spans are its children. */
  within<T>(fn: () => T): T;
  /** Ends the span with the run's outcome: `error` when it failed, `state` its end (success, failed, cancelled, released). */
  end(state: string, error?: Error): void;
}

/**
 * Starts the consumer span of a run of `job` from `queue`, linked to the span that submitted it
 * (`trace`, the traceparent its submit stored, if any: for a fan-out child, its parent's run
 * span), or answers null when no tracer is registered.
 */
export function startRunSpan(queue: string, job: Running, trace: string | undefined): RunSpan | null {
  const tracer = registeredTracer();
  if (!tracer) return null;
  const submitted = trace ? parseTraceparent(trace) : null;
  const span = tracer.startSpan(`process ${queue}`, {
    kind: api!.SpanKind.CONSUMER,
    attributes: {
      'messaging.system': 'rota',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': queue,
      'messaging.message.id': job.id,
      'rota.group': job.group,
      'rota.task': job.task,
      'rota.attempt': job.retries + 1,
    },
    links: submitted ? [{ context: submitted }] : undefined,
  });
  const spanContext = span.spanContext();
  if (!api!.isSpanContextValid(spanContext)) return null;
  const active = api!.trace.setSpan(api!.context.active(), span);
  return {
    trace: traceparent(spanContext),
    within: (fn) => api!.context.with(active, fn),
    end(state: string, error?: Error) {
      span.setAttribute('rota.outcome', state);
      if (error) failed(span, error);
      span.end();
    },
  };
}

/** Marks `span` failed with `error`. */
function failed(span: OTel.Span, error: unknown): void {
  const err = error instanceof Error ? error : new Error(String(error));
  span.recordException(err);
  span.setStatus({ code: api!.SpanStatusCode.ERROR, message: err.message });
}
