/**
 * HTML built with a tagged template that escapes every interpolated value, so that names, args,
 * logs and errors from users always show as text. Only markup made by {@link html} itself (or
 * marked with {@link raw}) is inserted as it is.
 */

/** Markup that is inserted without escaping. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for an HTML element or a quoted attribute. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

type Value = Html | URLSearchParams | string | number | boolean | null | undefined | readonly Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

/** Builds markup: the template's text as written, every value escaped (arrays joined, null/false dropped). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Marks trusted markup (never text from users). */
export function raw(text: string): Html {
  return new Html(text);
}

/** A time as `YYYY-MM-DD HH:MM:SS` UTC, or '–'. */
export function time(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '–';
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** Units of {@link duration}: size in ms, name, and the rounded count from which the next unit is used. */
const DURATION_UNITS: ReadonlyArray<readonly [number, string, number]> = [
  [1, 'ms', 1000],
  [1000, 's', 120],
  [60_000, 'min', 120],
  [3_600_000, 'h', 48],
  [86_400_000, 'd', Number.POSITIVE_INFINITY],
];

/**
 * A duration in words: `850 ms`, `12 s`, `4 min`, `3 h`, `2 d`. The unit is chosen on the rounded
 * count, so a value never reads as the next unit's threshold (`120 s` is `2 min`, as 120.4 s is).
 */
export function duration(ms: number): string {
  const a = Math.abs(ms);
  for (const [size, name, below] of DURATION_UNITS) {
    const n = Math.round(a / size);
    if (n < below) return `${ms < 0 ? -n : n} ${name}`;
  }
  return '';
}

/** `n` and `noun`, the noun in the plural but for one: `1 line`, `3 lines`. */
export function counted(n: number, noun: string): string {
  return `${count(n)} ${noun}${n === 1 ? '' : 's'}`;
}

/** A time relative to `now` (`12 s ago`, `in 3 min`), with the exact time as its title. */
export function ago(ms: number | undefined, now: number): Html {
  if (ms === undefined) return html`–`;
  const d = now - ms;
  return html`<time datetime="${new Date(ms).toISOString()}" title="${time(ms)}">${d >= 0 ? `${duration(d)} ago` : `in ${duration(-d)}`}</time>`;
}

/** A count with thousands separators. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** Bytes in KiB/MiB/GiB. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

/** A value as indented JSON (bigints as text), for args and results. */
export function pretty(v: unknown): string {
  if (v === undefined) return '–';
  return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x), 2) ?? String(v);
}

/**
 * A name (group, task, executor, host...) that never wraps mid-word: one line, cut with an
 * ellipsis past the column's width (style.css, `.name`), the whole name in its tooltip.
 */
export function name(text: string): Html {
  return html`<span class="name" title="${text}">${text}</span>`;
}
