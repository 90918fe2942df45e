/**
 * Reading Prometheus' text format in tests: samples by name and labels, the metric families
 * served; and the table of every metric in docs/metrics.md.
 */
import { readFileSync } from 'node:fs';

/** One sample line: its name, labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a /metrics body (comments left out). */
export function samples(body: string): Sample[] {
  const out: Sample[] = [];
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the sample `name` whose labels are exactly `labels`; undefined when none. */
export function sampleValue(body: string, name: string, labels: Record<string, string>): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  return samples(body).find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

/** The metric families a body declares (`# TYPE name type`): name -> type. */
export function families(body: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of body.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1], m[2]);
  return out;
}

/** The table's rows: metric -> { type, labels }. */
export function documentedMetrics(): Map<string, { type: string; labels: string[] }> {
  const text = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');
  const rows = new Map<string, { type: string; labels: string[] }>();
  for (const m of text.matchAll(/^\| `(rota_\w+)` \| (\w+) \| ([^|]+) \|/gm)) {
    rows.set(m[1], { type: m[2], labels: m[3].split(',').map((l) => l.trim().replace(/\*$/, '')) });
  }
  return rows;
}
