/** The demo's live view: per-tenant progress bars, light-tenant waits, the next periodic runs. */

export interface TenantView {
  group: string;
  submitted: number;
  done: number;
  waits: number[];
}

export interface DemoView {
  elapsedMs: number;
  tenants: TenantView[];
  next: Array<{ id: string; occurrence: number }>;
  periodicRuns: Map<string, number>;
}

/** The p-th percentile of sorted-or-not values (nearest rank), or undefined for none. */
export function percentile(values: number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function bar(done: number, total: number, width = 30): string {
  const filled = total === 0 ? 0 : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

const ms = (v: number | undefined) => (v === undefined ? '-' : `${Math.round(v)} ms`);

/** Renders the view as lines of text. */
export function render(v: DemoView): string[] {
  const lines = [
    `Rota demo: ${(v.elapsedMs / 1000).toFixed(1)} s`,
    '',
    'tenant        progress                         done/submitted   wait p50   wait p99',
  ];
  for (const t of v.tenants) {
    lines.push(
      `${t.group.padEnd(12)}  ${bar(t.done, t.submitted)}  ${`${t.done}/${t.submitted}`.padStart(14)}   ${ms(percentile(t.waits, 50)).padStart(8)}   ${ms(percentile(t.waits, 99)).padStart(8)}`,
    );
  }
  lines.push('', 'next periodic runs:');
  for (const n of v.next) {
    const runs = v.periodicRuns.get(n.id) ?? 0;
    lines.push(`  ${new Date(n.occurrence).toISOString()}  ${n.id.padEnd(10)} (ran ${runs}×)`);
  }
  return lines;
}
