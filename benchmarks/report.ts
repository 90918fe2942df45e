/** Summaries of runs, the terminal table, the JSON records and the Markdown report with hand-made SVG charts. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { median } from '../src/bench/measure.js';
import type { SystemName } from '../src/bench/peers/types.js';
import type { RunResult } from '../src/bench/workloads/common.js';

/** One record per case and system, as stored in results/runs/<date>.json. */
export interface CaseRecord {
  case: string;
  system: SystemName;
  jobsPerSec: number;
  jobsPerSecMin: number;
  jobsPerSecMax: number;
  redisCpuUsPerJob: number;
  /**
   * Redis's CPU time over the measured phase's wall time (median of the runs): near 1, Redis is
   * what bounds the case; well below, the clients are (their calls in flight, their pauses).
   */
  redisBusy: number;
  redisCommandsPerJob: number;
  scriptCallsPerJob: number;
  nodeCpuUsPerJob: number;
  peakRssMB: number;
  p50Ms?: number;
  p99Ms?: number;
  p999Ms?: number;
  /** 'ok', or what went wrong with the exactly-once check. */
  exactlyOnce: string;
  capped: boolean;
  /** Medians of the workload's extra figures. */
  extra: Record<string, number | null>;
  /** Median percentile curve (0..100) of waits, where the workload has one. */
  dist?: number[];
  /** The measured runs (warm-up excluded). */
  runs: Array<{
    jobsPerSec: number;
    seconds: number;
    jobs: number;
    redisCpuUsPerJob: number;
    redisCommandsPerJob: number;
    p50Ms?: number | null;
    p99Ms?: number | null;
    byCommand: Record<string, number>;
  }>;
}

const med = (xs: Array<number | null | undefined>) => {
  const v = xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  return v.length ? median(v) : null;
};

export function exactlyOnceVerdict(r: RunResult): string {
  if (r.duplicates > 0) return `FAIL: ${r.duplicates} jobs ran more than once`;
  if (!r.capped && r.unique !== r.expected) return `FAIL: ${r.unique} distinct of ${r.expected} expected`;
  return 'ok';
}

export function summarize(name: string, system: SystemName, runs: RunResult[]): CaseRecord {
  const per = (r: RunResult, v: number) => v / Math.max(1, r.jobs);
  const extraKeys = new Set(runs.flatMap((r) => Object.keys(r.extra)));
  const extra: Record<string, number | null> = {};
  for (const k of extraKeys) extra[k] = med(runs.map((r) => r.extra[k]));
  const verdicts = runs.map(exactlyOnceVerdict).filter((v) => v !== 'ok');
  const rec: CaseRecord = {
    case: name,
    system,
    jobsPerSec: med(runs.map((r) => r.jobsPerSec)) ?? 0,
    jobsPerSecMin: Math.min(...runs.map((r) => r.jobsPerSec)),
    jobsPerSecMax: Math.max(...runs.map((r) => r.jobsPerSec)),
    redisCpuUsPerJob: med(runs.map((r) => per(r, r.redis.cpuUs))) ?? 0,
    redisBusy: med(runs.map((r) => r.redis.cpuUs / 1e6 / Math.max(r.seconds, 1e-9))) ?? 0,
    redisCommandsPerJob: med(runs.map((r) => per(r, r.redis.commands))) ?? 0,
    scriptCallsPerJob: med(runs.map((r) => per(r, r.redis.scriptCalls))) ?? 0,
    nodeCpuUsPerJob: med(runs.map((r) => per(r, r.nodeCpuUs))) ?? 0,
    peakRssMB: Math.max(...runs.map((r) => r.peakRssBytes)) / 2 ** 20,
    exactlyOnce: verdicts[0] ?? 'ok',
    capped: runs.some((r) => r.capped),
    extra,
    runs: runs.map((r) => ({
      jobsPerSec: r.jobsPerSec,
      seconds: r.seconds,
      jobs: r.jobs,
      redisCpuUsPerJob: per(r, r.redis.cpuUs),
      redisCommandsPerJob: per(r, r.redis.commands),
      p50Ms: r.extra.p50Ms,
      p99Ms: r.extra.p99Ms,
      byCommand: r.redis.byCommand,
    })),
  };
  if ('p50Ms' in extra) rec.p50Ms = extra.p50Ms ?? undefined;
  if ('p99Ms' in extra) rec.p99Ms = extra.p99Ms ?? undefined;
  if ('p999Ms' in extra) rec.p999Ms = extra.p999Ms ?? undefined;
  const dists = runs.map((r) => r.dist).filter((d): d is number[] => Array.isArray(d) && d.length === 101);
  if (dists.length) rec.dist = Array.from({ length: 101 }, (_, i) => med(dists.map((d) => d[i])) ?? NaN);
  return rec;
}

const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || !Number.isFinite(n)
    ? '—'
    : n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const fmtRate = (n: number) => fmt(n, 0);
const fmtMs = (n: number | undefined | null) => (n === undefined || n === null ? '—' : n < 10 ? fmt(n, 2) : fmt(n, 0));

export const TABLE_HEADER = [
  'case',
  'system',
  'jobs/s (median)',
  'min–max',
  'Redis µs/job',
  'Redis busy',
  'cmds/job',
  'scripts/job',
  'Node µs/job',
  'RSS MB',
  'p50 ms',
  'p99 ms',
  'once',
];

export function tableRow(r: CaseRecord): string[] {
  return [
    r.case,
    r.system,
    fmtRate(r.jobsPerSec),
    `${fmtRate(r.jobsPerSecMin)}–${fmtRate(r.jobsPerSecMax)}`,
    fmt(r.redisCpuUsPerJob, 1),
    `${fmt(r.redisBusy * 100, 0)}%`,
    fmt(r.redisCommandsPerJob, 1),
    fmt(r.scriptCallsPerJob, 2),
    fmt(r.nodeCpuUsPerJob, 0),
    fmt(r.peakRssMB, 0),
    fmtMs(r.p50Ms),
    fmtMs(r.p99Ms),
    r.exactlyOnce === 'ok' ? (r.capped ? 'ok*' : 'ok') : `!!! ${r.exactlyOnce}`,
  ];
}

export function textTable(rows: string[][], header = TABLE_HEADER): string {
  const all = [header, ...rows];
  const w = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i < 2 || i === r.length - 1 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  return [line(header), w.map((n) => '-'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}

function mdTable(rows: string[][], header = TABLE_HEADER): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i < 2 ? ':--' : '--:')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

// ---------- cluster cases ----------

/** The primaries a cluster record or run reports on (p0, p1, ...). */
function primariesOf(extra: Record<string, number | null | undefined>): number[] {
  return Object.keys(extra)
    .filter((k) => /^p\d+Jobs$/.test(k))
    .map((k) => Number(k.slice(1, -4)))
    .sort((a, b) => a - b);
}

/** Which shards each primary holds, e.g. `p0: 0,3 +home  p1: 1,4  p2: 2,5`. */
function placementOf(extra: Record<string, number | null | undefined>): string {
  const ps = primariesOf(extra);
  const shards = extra.shards ?? 1;
  return ps
    .map((k) => {
      const own = Array.from({ length: shards }, (_, i) => i).filter((i) => extra[`shard${i}Primary`] === k);
      const home = extra.homePrimary === k && shards > 1 ? ' +home' : '';
      return `p${k}: ${own.join(',') || '—'}${home}`;
    })
    .join('  ');
}

const perPrimary = (extra: Record<string, number | null | undefined>, key: string, f: (v: number | null | undefined) => string) =>
  primariesOf(extra)
    .map((k) => f(extra[`p${k}${key}`]))
    .join(' / ');

/** One cluster run, per primary: its CPU per job of its own shards, its busy share, the balance, the light waits. */
export function clusterRunLine(r: RunResult): string {
  const e = r.extra;
  return `${placementOf(e)} | µs/job ${perPrimary(e, 'CpuUsPerJob', (v) => fmt(v, 1))} | busy ${perPrimary(e, 'Busy', (v) => `${fmt((v ?? 0) * 100, 0)}%`)} | balance ${fmt(e.balance, 2)} | light p50/p99 ms: other shard ${fmtMs(e.farP50Ms)}/${fmtMs(e.farP99Ms)}, same shard ${fmtMs(e.nearP50Ms)}/${fmtMs(e.nearP99Ms)}`;
}

export const CLUSTER_HEADER = [
  'case',
  'placement (shards per primary)',
  'jobs/s',
  'µs/job per primary',
  'busy per primary',
  'balance',
  'jobs max/min',
  'light p50/p99 ms, other shard',
  'light p50/p99 ms, same shard',
];

/** The cluster cases' rows (medians of the runs). */
export function clusterRows(recs: CaseRecord[]): string[][] {
  return recs.map((r) => {
    const e = r.extra;
    const waits = (w: 'far' | 'near') => (e[`${w}P99Ms`] == null ? '—' : `${fmtMs(e[`${w}P50Ms`])} / ${fmtMs(e[`${w}P99Ms`])}`);
    return [
      r.case,
      placementOf(e),
      fmtRate(r.jobsPerSec),
      perPrimary(e, 'CpuUsPerJob', (v) => fmt(v, 1)),
      perPrimary(e, 'Busy', (v) => `${fmt((v ?? 0) * 100, 0)}%`),
      fmt(e.balance, 2),
      fmt(e.jobBalance, 2),
      waits('far'),
      waits('near'),
    ];
  });
}

export function clusterTable(recs: CaseRecord[]): string {
  return textTable(clusterRows(recs), CLUSTER_HEADER);
}

/** The cluster goals: each primary's CPU per job within 1.3× of the one-shard queue's; balance within 1.3×. */
function clusterTargets(recs: CaseRecord[]): Target[] {
  const one = recs.find((r) => r.case === 'cluster-1' && r.system === 'rota');
  const ref = one ? one.extra[`p${one.extra.homePrimary}CpuUsPerJob`] : null;
  const out: Target[] = [];
  for (const r of recs.filter((x) => x.case.startsWith('cluster-') && x.case !== 'cluster-1' && x.system === 'rota')) {
    const per = primariesOf(r.extra).map((k) => r.extra[`p${k}CpuUsPerJob`] ?? NaN);
    const worst = Math.max(...per);
    const x = ref == null ? null : worst / ref;
    out.push({
      name: `${r.case}: each primary's Redis CPU per job ≤ 1.3× the one-shard queue's`,
      value:
        x === null
          ? 'not measured (needs cluster-1)'
          : `${fmt(x, 2)}× (${per.map((v) => fmt(v, 1)).join(' / ')} µs vs ${fmt(ref, 1)} µs)`,
      met: x === null ? null : x <= 1.3,
    });
    const b = r.extra.balance;
    out.push({
      name: `${r.case}: primaries' Redis CPU max/min ≤ 1.3`,
      value: b == null ? 'not measured' : fmt(b, 2),
      met: b == null ? null : b <= 1.3,
    });
  }
  return out;
}

// ---------- targets ----------

export interface Target {
  name: string;
  value: string;
  met: boolean | null;
}

export function targets(recs: CaseRecord[]): Target[] {
  const get = (c: string, s: SystemName) => recs.find((r) => r.case === c && r.system === s);
  const out: Target[] = [];
  const ratio = (a?: CaseRecord, b?: CaseRecord) => (a && b && b.jobsPerSec > 0 ? a.jobsPerSec / b.jobsPerSec : null);
  const d = get('drain-c100', 'rota');
  const rb = ratio(d, get('drain-c100', 'bullmq'));
  const rg = ratio(d, get('drain-c100', 'groupmq'));
  out.push({
    name: 'drain c100, 1,000 groups: ≥ 3× BullMQ',
    value: rb === null ? 'not measured' : `${fmt(rb, 2)}× (${fmtRate(d!.jobsPerSec)} jobs/s)`,
    met: rb === null ? null : rb >= 3,
  });
  out.push({
    name: 'drain c100, 1,000 groups: ≥ 3× GroupMQ',
    value: rg === null ? 'not measured' : `${fmt(rg, 2)}×`,
    met: rg === null ? null : rg >= 3,
  });
  const life = d?.extra.lifecycleRedisCpuUsPerJob;
  out.push({
    name: 'Redis CPU per job, submit + take + complete: ≤ 20 µs',
    value:
      life == null
        ? 'not measured'
        : `${fmt(life, 1)} µs (BullMQ ${fmt(get('drain-c100', 'bullmq')?.extra.lifecycleRedisCpuUsPerJob, 1)}, GroupMQ ${fmt(get('drain-c100', 'groupmq')?.extra.lifecycleRedisCpuUsPerJob, 1)})`,
    met: life == null ? null : life <= 20,
  });
  for (const c of ['ingest-bulk50', 'ingest-bulk1000']) {
    const r = ratio(get(c, 'rota'), get(c, 'bullmq'));
    out.push({
      name: `${c}: ≥ 3× BullMQ addBulk`,
      value: r === null ? 'not measured' : `${fmt(r, 2)}×`,
      met: r === null ? null : r >= 3,
    });
  }
  const l50 = get('latency-50', 'rota');
  out.push({
    name: 'pickup p99 at 50% load: < 5 ms',
    value: l50?.p99Ms == null ? 'not measured' : `${fmtMs(l50.p99Ms)} ms`,
    met: l50?.p99Ms == null ? null : l50.p99Ms < 5,
  });
  const idle = get('latency-10', 'rota')?.extra.idleCommandsPerSec;
  out.push({
    name: 'no polling while idle (Redis commands/s from an idle executor)',
    value:
      idle == null
        ? 'not measured'
        : `${fmt(idle, 2)}/s (BullMQ ${fmt(get('latency-10', 'bullmq')?.extra.idleCommandsPerSec, 2)}/s, GroupMQ ${fmt(get('latency-10', 'groupmq')?.extra.idleCommandsPerSec, 2)}/s)`,
    met: idle == null ? null : idle < 2,
  });
  const fl = get('fairness-light', 'rota');
  const fn = get('fairness-noflood', 'rota');
  if (fl?.p99Ms != null && fn?.p99Ms != null) {
    const x = fl.p99Ms / fn.p99Ms;
    out.push({
      name: 'noisy neighbour: light p99 ≤ 2× no-flood p99',
      value: `${fmtMs(fl.p99Ms)} ms vs ${fmtMs(fn.p99Ms)} ms (${fmt(x, 2)}×; BullMQ ${fmtMs(get('fairness-light', 'bullmq')?.p99Ms)} ms, GroupMQ ${fmtMs(get('fairness-light', 'groupmq')?.p99Ms)} ms)`,
      met: x <= 2,
    });
    const h = fl.jobsPerSec / fn.jobsPerSec;
    out.push({
      name: 'noisy neighbour: heavy tenant drains at ≥ 95% of its rate alone',
      value: `${fmt(h * 100, 1)}% (${fmtRate(fl.jobsPerSec)} vs ${fmtRate(fn.jobsPerSec)} jobs/s)`,
      met: h >= 0.95,
    });
  } else out.push({ name: 'noisy neighbour', value: 'not measured', met: null });
  const g1 = get('groups-1', 'rota');
  const g100k = get('groups-100000', 'rota');
  const gr = ratio(g100k, g1);
  out.push({
    name: '100,000 groups drain ≥ 80% as fast as 1 group',
    value:
      gr === null ? 'not measured' : `${fmt(gr * 100, 1)}% (${fmtRate(g100k!.jobsPerSec)} vs ${fmtRate(g1!.jobsPerSec)} jobs/s)`,
    met: gr === null ? null : gr >= 0.8,
  });
  const dl = get('delay-10k', 'rota');
  out.push({
    name: 'delayed: 10,000 jobs due within one second start with lateness p99 < 50 ms',
    value: dl?.p99Ms == null ? 'not measured' : `${fmtMs(dl.p99Ms)} ms (p50 ${fmtMs(dl.p50Ms)} ms)`,
    met: dl?.p99Ms == null ? null : dl.p99Ms < 50,
  });
  const rl = get('rate-1000', 'rota');
  const rv = rl?.extra.vsUnlimited;
  out.push({
    name: '1,000 groups with rate limits that allow the full rate drain ≥ 80% as fast as unlimited',
    value:
      rv == null
        ? 'not measured'
        : `${fmt(rv * 100, 1)}% (${fmtRate(rl!.jobsPerSec)} vs ${fmtRate(rl!.extra.unlimitedJobsPerSec ?? 0)} jobs/s)`,
    met: rv == null ? null : rv >= 0.8,
  });
  out.push(...clusterTargets(recs));
  return out;
}

// ---------- SVG ----------

const COLORS: Record<SystemName, string> = { rota: '#2b6cb0', bullmq: '#c05621', groupmq: '#2f855a' };
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Grouped horizontal bars: one group per case, one bar per system. */
export function barsSvg(title: string, recs: CaseRecord[], caseNames: string[], unit = 'jobs/s'): string {
  const systems = [...new Set(recs.map((r) => r.system))];
  const rows = caseNames.filter((c) => recs.some((r) => r.case === c));
  const max = Math.max(1, ...recs.filter((r) => rows.includes(r.case)).map((r) => r.jobsPerSecMax));
  const barH = 14,
    gap = 10,
    left = 140,
    width = 720,
    plotW = width - left - 110;
  const height = 40 + rows.length * (systems.length * barH + gap) + 30;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<text x="10" y="18" font-size="14" font-weight="bold">${esc(title)}</text>`,
  ];
  let y = 34;
  for (const c of rows) {
    parts.push(`<text x="${left - 8}" y="${y + (systems.length * barH) / 2 + 4}" text-anchor="end">${esc(c)}</text>`);
    for (const s of systems) {
      const r = recs.find((x) => x.case === c && x.system === s);
      if (r) {
        const w = (r.jobsPerSec / max) * plotW;
        parts.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH - 2}" fill="${COLORS[s]}"/>`);
        const x0 = left + (r.jobsPerSecMin / max) * plotW,
          x1 = left + (r.jobsPerSecMax / max) * plotW;
        parts.push(
          `<line x1="${x0.toFixed(1)}" x2="${x1.toFixed(1)}" y1="${y + barH / 2 - 1}" y2="${y + barH / 2 - 1}" stroke="#000" stroke-width="1"/>`,
        );
        parts.push(
          `<text x="${(left + Math.max(w, (r.jobsPerSecMax / max) * plotW) + 4).toFixed(1)}" y="${y + barH - 4}">${fmtRate(r.jobsPerSec)}</text>`,
        );
      }
      y += barH;
    }
    y += gap;
  }
  let lx = left;
  for (const s of systems) {
    parts.push(
      `<rect x="${lx}" y="${y + 4}" width="10" height="10" fill="${COLORS[s]}"/><text x="${lx + 14}" y="${y + 13}">${s}</text>`,
    );
    lx += 90;
  }
  parts.push(`<text x="${width - 10}" y="${y + 13}" text-anchor="end">${esc(unit)}, median; line: min–max</text></svg>`);
  return parts.join('\n');
}

/** Percentile curves of waits (log-scale x), one line per system and case (solid and dashed). */
export function cdfSvg(
  title: string,
  series: Array<{ label: string; system: SystemName; dashed: boolean; dist: number[] }>,
): string {
  const width = 720,
    height = 340,
    left = 50,
    right = 170,
    top = 30,
    bottom = 40;
  const pw = width - left - right,
    ph = height - top - bottom;
  const vals = series.flatMap((s) => s.dist).filter((v) => Number.isFinite(v) && v > 0);
  const lo = Math.max(0.05, Math.min(...vals, 1)),
    hi = Math.max(...vals, 10);
  const lx0 = Math.floor(Math.log10(lo)),
    lx1 = Math.ceil(Math.log10(hi));
  const X = (v: number) => left + ((Math.log10(Math.max(v, 10 ** lx0)) - lx0) / (lx1 - lx0)) * pw;
  const Y = (p: number) => top + ph - (p / 100) * ph;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`,
    `<text x="10" y="18" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<rect x="${left}" y="${top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`,
  ];
  for (let e = lx0; e <= lx1; e++) {
    const x = X(10 ** e);
    parts.push(
      `<line x1="${x}" x2="${x}" y1="${top}" y2="${top + ph}" stroke="#eee"/><text x="${x}" y="${top + ph + 14}" text-anchor="middle">${10 ** e >= 1 ? 10 ** e : (10 ** e).toFixed(-e)} ms</text>`,
    );
  }
  for (const p of [0, 50, 90, 99, 100])
    parts.push(
      `<text x="${left - 4}" y="${Y(p) + 4}" text-anchor="end">p${p}</text><line x1="${left}" x2="${left + pw}" y1="${Y(p)}" y2="${Y(p)}" stroke="#eee"/>`,
    );
  series.forEach((s, i) => {
    const pts = s.dist.map((v, p) => `${X(v).toFixed(1)},${Y(p).toFixed(1)}`).join(' ');
    parts.push(
      `<polyline points="${pts}" fill="none" stroke="${COLORS[s.system]}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="5,3"' : ''}/>`,
    );
    const ly = top + 10 + i * 16;
    parts.push(
      `<line x1="${left + pw + 10}" x2="${left + pw + 34}" y1="${ly}" y2="${ly}" stroke="${COLORS[s.system]}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="5,3"' : ''}/><text x="${left + pw + 38}" y="${ly + 4}">${esc(s.label)}</text>`,
    );
  });
  parts.push(
    `<text x="${left + pw / 2}" y="${height - 6}" text-anchor="middle">wait from submit to pickup (log scale)</text></svg>`,
  );
  return parts.join('\n');
}

// ---------- files ----------

export interface RunInfo {
  date: string;
  command: string;
  quick: boolean;
  aof: boolean;
  runs: number;
  node: string;
  redis: string;
  cpus: string;
  loadavg: number[];
  seconds: number;
}

/**
 * Writes runs/<date>.json under `dir` (git-ignored); a complete run at full sizes (not --only,
 * --rate or --quick) also writes latest.json, REPORT.md and the charts in `dir`, which the README
 * quotes. `kind` names any other run in its file name.
 */
export function writeResults(
  dir: string,
  info: RunInfo,
  recs: CaseRecord[],
  caseOrder: string[],
  kind?: 'partial' | 'quick',
): { json: string; md: string | null } {
  mkdirSync(join(dir, 'runs'), { recursive: true });
  const stamp = info.date.replace(/[:]/g, '-').replace(/\..*$/, '');
  const body = JSON.stringify({ info, records: recs }, null, 1);
  const json = join(dir, 'runs', `${stamp}${kind ? `-${kind}` : ''}.json`);
  writeFileSync(json, body);
  if (kind) return { json, md: null };
  writeFileSync(join(dir, 'latest.json'), body);

  const sorted = caseOrder.flatMap((c) => recs.filter((r) => r.case === c));
  const svgs: Array<[string, string]> = [
    [
      'throughput-drain.svg',
      barsSvg(
        'Drain throughput (no-op jobs)',
        recs,
        caseOrder.filter((c) => c.startsWith('drain') || c.startsWith('groups')),
      ),
    ],
    [
      'throughput-ingest.svg',
      barsSvg(
        'Ingest throughput',
        recs,
        caseOrder.filter((c) => c.startsWith('ingest')),
      ),
    ],
  ];
  const lightSeries = (['rota', 'bullmq', 'groupmq'] as SystemName[]).flatMap((s) =>
    (['fairness-light', 'fairness-noflood'] as const).flatMap((c) => {
      const r = recs.find((x) => x.case === c && x.system === s);
      return r?.dist
        ? [
            {
              label: `${s} ${c === 'fairness-light' ? 'flood' : 'no flood'}`,
              system: s,
              dashed: c !== 'fairness-light',
              dist: r.dist,
            },
          ]
        : [];
    }),
  );
  if (lightSeries.length)
    svgs.push(['light-tenant-wait.svg', cdfSvg('Light-tenant wait, with and without a noisy neighbour', lightSeries)]);
  const latSeries = (['rota', 'bullmq', 'groupmq'] as SystemName[]).flatMap((s) => {
    const r = recs.find((x) => x.case === 'latency-50' && x.system === s);
    return r?.dist ? [{ label: `${s} at 50% load`, system: s, dashed: false, dist: r.dist }] : [];
  });
  if (latSeries.length) svgs.push(['pickup-latency-50.svg', cdfSvg("Pickup latency at 50% of each system's maximum", latSeries)]);
  for (const [name, svg] of svgs) writeFileSync(join(dir, name), svg);

  const t = targets(recs);
  const md = [
    `# Rota benchmark report`,
    '',
    `Run ${info.date} with \`${info.command}\` (${info.quick ? 'quick sizes' : 'full sizes'}, ${info.runs} measured runs per system after ${info.quick ? 'no' : 'one'} warm-up, interleaved), ${info.seconds.toFixed(0)} s.`,
    `Node ${info.node}, ${info.redis}, ${info.cpus}; load average at start ${info.loadavg.map((x) => x.toFixed(2)).join(' ')}. ${info.aof ? 'AOF on, appendfsync everysec.' : 'No persistence.'}`,
    '',
    "This machine is shared (2 cores: Redis, the benchmark process and other engineers' test runs compete), so figures are noisy; ratios within one run are more telling than absolute numbers.",
    '',
    '## Targets (Rota)',
    '',
    '| target | measured | met |',
    '|:--|:--|:--|',
    ...t.map((x) => `| ${x.name} | ${x.value} | ${x.met === null ? '—' : x.met ? 'yes' : '**no**'} |`),
    '',
    '## Results',
    '',
    "Redis µs/job: used_cpu_sys + used_cpu_user of the server over the measured phase, per job. Redis busy: that CPU time over the phase's wall time (near 100%, Redis bounds the case; well below, the clients do: their calls in flight, their pauses). cmds/job: every command the server executed (INFO commandstats, commands inside scripts included, the harness's own INFO/CONFIG left out); scripts/job: script calls (EVALSHA, EVAL, FCALL). Node µs/job: CPU of the benchmark process (and forked executors). RSS: peak resident set of the benchmark process. once: every job ran exactly once (ok* = the run hit its time cap; no job ran twice, the rest was still waiting).",
    '',
    mdTable(sorted.map(tableRow)),
    '',
    ...(sorted.some((r) => r.case.startsWith('cluster-'))
      ? [
          '## Cluster (Rota only)',
          '',
          CLUSTER_NOTE,
          '',
          mdTable(clusterRows(sorted.filter((r) => r.case.startsWith('cluster-'))), CLUSTER_HEADER),
          '',
        ]
      : []),
    ...svgs.map(([name]) => `![${name}](${name})\n`),
    '## Extra figures (medians)',
    '',
    ...sorted
      .filter((r) => Object.keys(r.extra).length)
      .map(
        (r) =>
          `- ${r.case} / ${r.system}: ${Object.entries(r.extra)
            .map(([k, v]) => `${k} ${fmt(v, 2)}`)
            .join(', ')}`,
      ),
    '',
    '## Method',
    '',
    METHOD,
  ].join('\n');
  const mdPath = join(dir, 'REPORT.md');
  writeFileSync(mdPath, md);
  return { json, md: mdPath };
}

/** What the cluster table shows, for REPORT.md. */
export const CLUSTER_NOTE =
  "BullMQ and GroupMQ cannot spread one queue over a cluster, so only Rota runs here. One queue of 1, 3 or 6 shards on a Redis Cluster of three primaries (no replicas), the shards' slots moved before the run so that shard i is on primary i mod 3 (the home shard on the next one in turn). µs/job per primary: that primary's used_cpu_sys + used_cpu_user over the drain, divided by the jobs of the groups its shards hold (— when it holds none). busy: that CPU over the drain's wall time. balance: the primaries' CPU max/min; jobs max/min: the same for their jobs (the groups' hash is not perfectly even). Light waits: the noisy neighbour of fairness-light on a fresh queue, the light tenants in another shard than the flood (on another primary), then in its own. This machine has 2 cores, so the three primaries, the executor and the producer share them: the per-primary CPU and the balance carry over to a larger machine, the jobs/s does not; the full throughput claim (about three times one primary's rate) needs one core per primary (and executors enough to feed them).";

const METHOD = `- One private \`redis-server\` (started by the harness, no persistence unless \`--aof\`), one Node, same 100-byte payload, auto-pipelining off (the ioredis default) for every system.
- Before every run: FLUSHALL and CONFIG RESETSTAT; each run uses a fresh queue name. One warm-up run per system and case, then the measured runs, interleaved (rota, bullmq, groupmq, rota, …). Median and min–max are reported.
- Each system runs in its own long-lived child process; executors run in that process, except drain-c100-2proc (two forked executor processes, concurrency 100 each).
- Retention is the same for all: 10,000 completed and 100,000 failed jobs kept (Rota's default keepSucceeded count; BullMQ \`removeOnComplete: { count: 10000 }\`; GroupMQ \`keepCompleted: 10000\`).
- Redis CPU per job is the server's whole CPU over the phase divided by the jobs, so at low rates (latency-10) it includes Redis's own background work (serverCron) and is inflated for every system alike.
- A run stops at its time cap (drain and groups: 15 s full, 5 s quick; fairness: 8 s full) and then reports the rate over the jobs that ran (marked ok*); nothing is lost, the rest was still waiting.
- Rota runs in its shipped configuration: fair round-robin over groups, leases (30 s, heartbeat), idempotent submission, events stream on.
- BullMQ: one queue shared by every tenant (its open-source edition has no fair groups); \`Queue.add\`, \`Queue.addBulk\`, \`Worker\` with \`concurrency\`.
- GroupMQ: one group per tenant; \`Queue.add\` (it has no addBulk: a bulk batch is that many \`add()\` calls issued together, autoBatch off because it acknowledges jobs before they are in Redis); \`Worker\` with \`concurrency\`. GroupMQ runs at most one job per group at a time, by design, which caps groups-1 and its heavy tenant in the fairness case.
- ingest-*: N jobs over 1,000 tenants; serial awaits each submit; inflight keeps 1,000 submits outstanding; bulk submits batches of 50 or 1,000 one after another. The check counts waiting jobs afterwards.
- drain-*: 100,000 jobs (5,000 quick; drain-c1 5,000, 2,000 quick, which at concurrency 1 would otherwise take minutes a run) filled in batches of 1,000 over 1,000 tenants, then executors with concurrency c run no-op handlers until all ran. With 10,000 finished jobs kept, most finished jobs are trimmed during the drain, as in a queue that runs for a while. Jobs/s is over the drain; lifecycleRedisCpuUsPerJob adds the fill (submit + take + complete). groups-G: the same 100,000 jobs over G tenants at c = 100, so that only the number of groups changes (groups-1000 is drain-c100 again).
- latency-P: Poisson arrivals, one submit call per job, at P% of the system's own maximum in this setup (calibrated once per run: one-by-one submits with 100 outstanding while its executor runs; "rate" in the extra figures is the arrival rate used), 1,000 tenants, concurrency 100; pickup = handler start − submit call. latency-10 then counts the commands an idle executor causes per second. Rota sends submit() calls made together (here: continuing from replies that arrived together), or made while its previous submit call is unanswered, in one script call, so its maximum (100 outstanding) is 1.5–2 times the peers' and its P% rate is higher than theirs; \`npm run bench -- --only latency-50 --rate N\` runs every system at the same rate N instead.
- fairness-light: a 20,000-job backlog of 10 ms jobs in one tenant, concurrency 100, while 10 light tenants submit one 10 ms job every 50 ms each; jobs/s is the heavy tenant's drain rate; p50/p99 are light-tenant waits. fairness-noflood: the light tenants alone (their waits), then the backlog alone (jobs/s: the tenant's rate with no neighbours, the FIFO reference). Jain's index: mean over 100 ms windows of the index of jobs served among groups that had work waiting through the whole window (— when no window had two such groups). Runs are capped (8 s full) so GroupMQ's one-at-a-time heavy tenant does not run for minutes.
- cluster-N (Rota only): a queue of N shards on a Redis Cluster of three primaries started by the harness (no replicas, FLUSHALL and CONFIG RESETSTAT on each before every run), the shard slots placed evenly first; the drain-c100 drain, then fairness-light twice (light tenants in another shard, then in the flood's). The three cases run interleaved (a round of 1, 3, 6 shards at a time), 3 measured runs after a warm-up unless --runs says otherwise. Jobs/s and Redis µs/job in the main table are the drain's, with the primaries' CPU added up; the cluster table has them per primary.`;
