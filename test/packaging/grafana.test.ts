/**
 * deploy/grafana/rota.json: every query of every panel and variable parses as PromQL (Prometheus'
 * own Lezer grammar), and every metric it names is one Rota serves: a row of docs/metrics.md,
 * whose table test/observability/metrics-table.test.ts checks against real processes.
 */
import { readFileSync } from 'node:fs';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { documentedMetrics } from '../helpers/metrics-text.js';

interface Panel {
  type: string;
  title: string;
  panels?: Panel[];
  targets?: Array<{ expr: string }>;
}

/** Grafana's variables in a query, replaced by values PromQL parses. */
function substituted(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m').replace(/\$\{?(\w+)\}?/g, 'x');
}

/**
 * The metric names a PromQL expression selects (the identifier of each vector selector: not
 * functions, label names, `by (...)` labels or strings).
 * @throws when the expression does not parse, or selects a metric by `__name__` or a quoted name.
 */
function metricNames(expr: string): string[] {
  const text = substituted(expr);
  const names: string[] = [];
  const errors: number[] = [];
  parser.parse(text).iterate({
    enter(ref) {
      if (ref.type.isError) errors.push(ref.from);
      if (ref.name === 'VectorSelector') {
        const id = ref.node.getChild('Identifier');
        if (!id) throw new Error(`a selector without a metric name in ${expr}`);
        names.push(text.slice(id.from, id.to));
      }
      if (ref.name === 'LabelName' && text.slice(ref.from, ref.to) === '__name__') throw new Error(`__name__ in ${expr}`);
    },
  });
  if (errors.length > 0) throw new Error(`not PromQL at ${errors[0]}: ${expr}`);
  return names;
}

/** The family a sample name belongs to (a histogram's _bucket, _sum and _count series are its own). */
function family(name: string, known: ReadonlyMap<string, { type: string }>): string {
  if (known.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return known.get(base)?.type === 'histogram' ? base : name;
}

const dashboard = JSON.parse(readFileSync(new URL('../../deploy/grafana/rota.json', import.meta.url), 'utf8')) as {
  panels: Panel[];
  templating: { list: Array<{ type: string; query: unknown }> };
};

/** Every query of the dashboard: its panels' (rows' panels included) and its query variables'. */
function queries(): Array<{ where: string; expr: string }> {
  const out: Array<{ where: string; expr: string }> = [];
  const visit = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) out.push({ where: p.title, expr: t.expr });
      visit(p.panels ?? []);
    }
  };
  visit(dashboard.panels);
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query as { query: string }).query;
    // label_values(<selector>, <label>): the selector is PromQL
    const m = /^label_values\((.*),\s*\w+\)$/.exec(q);
    out.push({ where: 'variables', expr: m ? m[1] : q });
  }
  return out;
}

describe('the Grafana dashboard (deploy/grafana/rota.json)', () => {
  it('reads metric names as PromQL does, and refuses what does not parse', () => {
    expect(
      metricNames(
        'sum by (task, le) (rate(rota_a_total{queue=~"$queue", task!="x"}[$__rate_interval])) / on (task) max(rota_b) or vector(0)',
      ),
    ).toEqual(['rota_a_total', 'rota_b']);
    expect(metricNames('histogram_quantile(0.95, sum by (le) (rate(rota_h_bucket[5m])))')).toEqual(['rota_h_bucket']);
    expect(() => metricNames('sum(rate(rota_a_total[5m])')).toThrow(/not PromQL/);
    expect(() => metricNames('{__name__="rota_a_total"}')).toThrow();
  });

  it('names only metrics Rota serves, in every query', () => {
    const served = documentedMetrics();
    const all = queries();
    expect(all.length).toBeGreaterThan(15);
    const unknown: string[] = [];
    const used = new Set<string>();
    for (const { where, expr } of all) {
      const names = metricNames(expr);
      expect(names.length, `${where}: ${expr}`).toBeGreaterThan(0);
      for (const n of names) {
        const f = family(n, served);
        if (!served.has(f)) unknown.push(`${where}: ${n}`);
        used.add(f);
      }
    }
    expect(unknown).toEqual([]);
    // what the dashboard is for: throughput, failures, backlog, oldest wait, lateness, slots, Redis
    for (const m of [
      'rota_jobs_succeeded_total',
      'rota_jobs_failed_total',
      'rota_queue_runnable_jobs',
      'rota_queue_oldest_runnable_wait_seconds',
      'rota_periodic_lateness_seconds',
      'rota_executor_slots',
      'rota_server_clock_jumps_total',
    ])
      expect(used, m).toContain(m);
  });
});
