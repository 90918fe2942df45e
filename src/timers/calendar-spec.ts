/**
 * The systemd.time(7) calendar-event grammar: parsing, normalization,
 * validation and the canonical ("Normalized form") text, matching systemd 252.
 */
import { TimerSyntaxError } from '../errors.js';
import { isValidTimeZone } from './zone.js';

export const USEC_PER_SEC = 1_000_000;
export const MIN_YEAR = 1970;
export const MAX_YEAR = 2199;
const BITS_WEEKDAYS = 127;
const MAX_COMPONENTS = 240;
const INT_MAX = 2147483647;

/** One element of a list: `start`, `start..stop`, `start/repeat`, `start..stop/repeat`. */
export interface Component {
  start: number;
  /** -1 when there is no upper bound. */
  stop: number;
  /** 0 when the value does not repeat. */
  repeat: number;
  /** Offset of the element in the spec, for error messages. */
  pos: number;
}

/** A chain is a list of components; `null` means `*` (any value). */
export type Chain = Component[] | null;

/** A parsed calendar event. Seconds are held in microseconds. */
export interface CalendarSpec {
  /** Bit 0 = Monday … bit 6 = Sunday; -1 = any day. */
  weekdays: number;
  year: Chain;
  month: Chain;
  day: Chain;
  hour: Chain;
  minute: Chain;
  usec: Chain;
  endOfMonth: boolean;
  utc: boolean;
  timezone: string | null;
}

const DAY_NAMES: ReadonlyArray<readonly [string, number]> = [
  ['monday', 0],
  ['mon', 0],
  ['tuesday', 1],
  ['tue', 1],
  ['wednesday', 2],
  ['wed', 2],
  ['thursday', 3],
  ['thu', 3],
  ['friday', 4],
  ['fri', 4],
  ['saturday', 5],
  ['sat', 5],
  ['sunday', 6],
  ['sun', 6],
];
const DAY_ABBR = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

const isDigit = (ch: string | undefined): boolean => ch !== undefined && ch >= '0' && ch <= '9';

const at = (s: string, i: number): string => (i < s.length ? s[i]! : '');

class Parser {
  i = 0;
  constructor(
    readonly spec: string,
    readonly s: string,
  ) {}

  fail(part: string, reason: string, pos = this.i): never {
    throw new TimerSyntaxError(this.spec, pos, part, reason);
  }

  skipSpaces(): void {
    while (at(this.s, this.i) === ' ') this.i++;
  }

  /** Weekday names, lists and ranges. Returns the bits (0 when absent). */
  weekdays(): number {
    let bits = 0;
    let l = -1;
    let first = true;
    const s = this.s;
    for (;;) {
      const rest = s.slice(this.i, this.i + 9).toLowerCase();
      const hit = DAY_NAMES.find(([name]) => rest.startsWith(name));
      if (!hit) {
        if (first) return bits;
        this.fail('weekday', 'expected a weekday name');
      }
      const [name, nr] = hit;
      const after = at(s, this.i + name.length);
      if (!['', '-', '.', ',', ' '].includes(after))
        this.fail('weekday', `unexpected ${JSON.stringify(after)} after weekday`, this.i + name.length);
      bits |= 1 << nr;
      if (l >= 0) {
        if (l > nr) this.fail('weekday', 'weekday range runs backwards');
        for (let j = l + 1; j < nr; j++) bits |= 1 << j;
      }
      this.i += name.length;
      if (this.i >= s.length) return bits;
      if (at(s, this.i) === ' ') {
        this.skipSpaces();
        return bits;
      }
      const ch = at(s, this.i);
      if (ch === '.') {
        if (l >= 0) this.fail('weekday', 'range within a range');
        if (at(s, this.i + 1) !== '.') this.fail('weekday', 'expected ".."');
        l = nr;
        this.i += 2;
      } else if (ch === '-') {
        if (l >= 0) this.fail('weekday', 'range within a range');
        l = nr;
        this.i += 1;
      } else if (ch === ',') {
        l = -1;
        this.i += 1;
      }
      if (this.i >= s.length || at(s, this.i) === ' ') {
        if (l >= 0) this.fail('weekday', 'open weekday range');
        this.skipSpaces();
        return bits;
      }
      first = false;
    }
  }

  /** An unsigned decimal; with `usec`, seconds with an optional fraction, in microseconds. */
  decimal(part: string, usec: boolean): number {
    const s = this.s;
    const begin = this.i;
    if (!isDigit(at(s, this.i))) this.fail(part, 'expected a number');
    let j = this.i;
    while (isDigit(at(s, j))) j++;
    const digits = s.slice(this.i, j).replace(/^0+(?=\d)/, '');
    let value = digits.length > 12 ? Number.POSITIVE_INFINITY : Number(digits);
    if (usec) {
      value *= USEC_PER_SEC;
      if (at(s, j) === '.' && at(s, j + 1) !== '.') {
        j++;
        if (!isDigit(at(s, j))) this.fail(part, 'expected digits after the decimal point', j);
        let frac = 0;
        let n = 0;
        for (; n < 6 && isDigit(at(s, j)); n++, j++) frac = frac * 10 + Number(at(s, j));
        for (; n < 6; n++) frac *= 10;
        if (at(s, j) >= '5' && at(s, j) <= '9') frac++;
        while (isDigit(at(s, j))) j++;
        value += frac;
      }
    }
    if (value > INT_MAX) this.fail(part, 'number out of range', begin);
    this.i = j;
    return value;
  }

  component(part: string, usec: boolean, chain: Component[]): void {
    const s = this.s;
    for (let nesting = 0; ; nesting++) {
      if (nesting > MAX_COMPONENTS) this.fail(part, 'too many list elements');
      const pos = this.i;
      const start = this.decimal(part, usec);
      let stop = -1;
      let repeat = 0;
      if (at(s, this.i) === '.' && at(s, this.i + 1) === '.') {
        this.i += 2;
        stop = this.decimal(part, usec);
        repeat = usec ? USEC_PER_SEC : 1;
      }
      if (at(s, this.i) === '/') {
        this.i++;
        const rpos = this.i;
        repeat = this.decimal(part, usec);
        if (repeat === 0) this.fail(part, 'repetition must not be zero', rpos);
      } else {
        if (start > INT_MAX - repeat) this.fail(part, 'number out of range', pos);
        if (usec && stop >= 0 && start + repeat > stop) this.fail(part, 'range shorter than one second', pos);
      }
      const ch = at(s, this.i);
      if (!['', ' ', ',', '-', '~', ':'].includes(ch)) this.fail(part, `unexpected ${JSON.stringify(ch)}`);
      chain.push({ start, stop, repeat, pos });
      if (ch !== ',') return;
      this.i++;
    }
  }

  chain(part: string, usec: boolean): Chain {
    if (at(this.s, this.i) === '*') {
      const pos = this.i;
      this.i++;
      return usec ? [{ start: 0, stop: -1, repeat: USEC_PER_SEC, pos }] : null;
    }
    const chain: Component[] = [];
    this.component(part, usec, chain);
    return chain;
  }
}

function constChain(...values: number[]): Chain {
  return values.map((start) => ({ start, stop: -1, repeat: 0, pos: 0 }));
}

function emptySpec(): CalendarSpec {
  return {
    weekdays: 0,
    year: null,
    month: null,
    day: null,
    hour: null,
    minute: null,
    usec: null,
    endOfMonth: false,
    utc: false,
    timezone: null,
  };
}

function shorthand(name: string): CalendarSpec | null {
  const c = emptySpec();
  const zeroTime = (): void => {
    c.hour = constChain(0);
    c.minute = constChain(0);
    c.usec = constChain(0);
  };
  switch (name.toLowerCase()) {
    case 'minutely':
      c.usec = constChain(0);
      return c;
    case 'hourly':
      c.minute = constChain(0);
      c.usec = constChain(0);
      return c;
    case 'daily':
      zeroTime();
      return c;
    case 'weekly':
      c.weekdays = 1;
      zeroTime();
      return c;
    case 'monthly':
      c.day = constChain(1);
      zeroTime();
      return c;
    case 'annually':
    case 'yearly':
    case 'anually':
      c.month = constChain(1);
      c.day = constChain(1);
      zeroTime();
      return c;
    case 'quarterly':
      c.month = constChain(1, 4, 7, 10);
      c.day = constChain(1);
      zeroTime();
      return c;
    case 'biannually':
    case 'bi-annually':
    case 'semiannually':
    case 'semi-annually':
      c.month = constChain(1, 7);
      c.day = constChain(1);
      zeroTime();
      return c;
    default:
      return null;
  }
}

function fromTimestamp(p: Parser): CalendarSpec {
  const s = p.s;
  let j = p.i + 1;
  while (at(s, j) === ' ' || at(s, j) === '\t') j++;
  if (at(s, j) === '+') j++;
  const begin = j;
  while (isDigit(at(s, j))) j++;
  if (j === begin) p.fail('timestamp', 'expected seconds since the epoch after "@"', begin);
  if (j < s.length) p.fail('timestamp', `unexpected ${JSON.stringify(at(s, j))}`, j);
  const secs = Number(s.slice(begin, j));
  const d = new Date(secs * 1000);
  if (!Number.isFinite(d.getTime())) p.fail('timestamp', 'out of range', begin);
  const c = emptySpec();
  c.utc = true;
  c.year = constChain(d.getUTCFullYear());
  c.month = constChain(d.getUTCMonth() + 1);
  c.day = constChain(d.getUTCDate());
  c.hour = constChain(d.getUTCHours());
  c.minute = constChain(d.getUTCMinutes());
  c.usec = constChain(d.getUTCSeconds() * USEC_PER_SEC);
  for (const ch of [c.year, c.month, c.day, c.hour, c.minute, c.usec]) ch![0]!.pos = begin;
  return c;
}

function parseDateAndTime(p: Parser, c: CalendarSpec): void {
  const s = p.s;
  // Date: [[year-]month-]day, or nothing when a time follows directly.
  if (p.i < s.length) {
    const save = p.i;
    const first = p.chain('date', false);
    const ch = at(s, p.i);
    if (ch === '' || ch === ':') {
      p.i = save; // it was the hour of a time
    } else {
      if (ch === '~') c.endOfMonth = true;
      else if (ch !== '-') p.fail('date', `unexpected ${JSON.stringify(ch)}`);
      p.i++;
      const second = p.chain(c.endOfMonth ? 'day' : 'month', false);
      const ch2 = at(s, p.i);
      if (ch2 === '' || ch2 === ' ') {
        p.skipSpaces();
        c.month = first;
        c.day = second;
      } else {
        if (c.endOfMonth) p.fail('day', `unexpected ${JSON.stringify(ch2)}`);
        if (ch2 === '~') c.endOfMonth = true;
        else if (ch2 !== '-') p.fail('date', `unexpected ${JSON.stringify(ch2)}`);
        p.i++;
        const third = p.chain('day', false);
        const ch3 = at(s, p.i);
        if (ch3 !== '' && ch3 !== ' ') p.fail('day', `unexpected ${JSON.stringify(ch3)}`);
        p.skipSpaces();
        c.year = first;
        c.month = second;
        c.day = third;
      }
    }
  }
  // Time: hour:minute[:second], or 00:00:00 when left out.
  if (p.i >= s.length) {
    c.hour = constChain(0);
    c.minute = constChain(0);
    c.usec = constChain(0);
    return;
  }
  c.hour = p.chain('hour', false);
  if (at(s, p.i) !== ':') p.fail('time', 'expected ":" after the hour');
  p.i++;
  c.minute = p.chain('minute', false);
  if (p.i >= s.length) {
    c.usec = constChain(0);
    return;
  }
  if (at(s, p.i) !== ':') p.fail('time', 'expected ":" after the minute');
  p.i++;
  c.usec = p.chain('second', true);
  if (p.i < s.length) p.fail('second', `unexpected ${JSON.stringify(at(s, p.i))}`);
}

function compare(a: Component, b: Component): number {
  return a.start - b.start || a.stop - b.stop || a.repeat - b.repeat;
}

function normalizeChain(chain: Chain): Chain {
  if (!chain) return chain;
  for (const c of chain) {
    if (c.stop > c.start && c.repeat > 0) c.stop -= (c.stop - c.start) % c.repeat;
    // A repetition that cannot trigger even once, or a one-value range, is a plain value.
    if ((c.stop > c.start && c.repeat > 0 && c.start + c.repeat > c.stop) || c.start === c.stop) {
      c.repeat = 0;
      c.stop = -1;
    }
  }
  const sorted = [...chain].sort(compare);
  return sorted.filter((c, k) => k === 0 || compare(sorted[k - 1]!, c) !== 0);
}

function fixYear(chain: Chain): void {
  for (const c of chain ?? []) {
    if (c.start >= 0 && c.start < 70) c.start += 2000;
    else if (c.start >= 70 && c.start < 100) c.start += 1900;
    if (c.stop >= 0 && c.stop < 70) c.stop += 2000;
    else if (c.stop >= 70 && c.stop < 100) c.stop += 1900;
  }
}

function checkChain(spec: string, part: string, chain: Chain, from: number, to: number, eom: boolean): void {
  if (!chain) return;
  if (eom) to -= 3;
  for (const c of chain) {
    const bad = (reason: string): never => {
      throw new TimerSyntaxError(spec, c.pos, part, reason);
    };
    const unit = part === 'second' ? USEC_PER_SEC : 1;
    const show = (v: number): string => String(v / unit);
    if (c.start < from || c.start > to) bad(`${show(c.start)} is outside ${show(from)}..${show(to)}`);
    if (c.repeat > to - from) bad(`repetition ${show(c.repeat)} is too large`);
    if (c.stop >= 0) {
      if (c.stop < from || c.stop > to) bad(`${show(c.stop)} is outside ${show(from)}..${show(to)}`);
      if (c.start + c.repeat > c.stop) bad('range is empty or shorter than its repetition');
    } else if (eom && c.start - c.repeat < from) {
      bad('repetition runs past the start of the month');
    } else if (!eom && c.start + c.repeat > to) {
      bad('repetition runs past the end of the range');
    }
  }
}

/**
 * Parses a systemd calendar event. The spec may end with ` UTC` or an IANA
 * zone name. Throws {@link TimerSyntaxError} for anything systemd rejects.
 */
export function parseCalendarSpec(spec: string): CalendarSpec {
  let body = spec;
  let utc = false;
  let timezone: string | null = null;
  if (body.length >= 4 && body.slice(-4).toLowerCase() === ' utc') {
    utc = true;
    body = body.slice(0, -4);
  } else {
    const sp = body.lastIndexOf(' ');
    if (sp >= 0 && isValidTimeZone(body.slice(sp + 1))) {
      timezone = body.slice(sp + 1);
      body = body.slice(0, sp);
    }
  }
  const p = new Parser(spec, body);
  if (body.length === 0) p.fail('spec', 'empty calendar event', 0);
  let c = shorthand(body);
  if (!c) {
    const weekdays = p.weekdays();
    if (at(body, p.i) === '@') c = fromTimestamp(p);
    else {
      c = emptySpec();
      parseDateAndTime(p, c);
    }
    c.weekdays = weekdays;
  }
  if (utc) c.utc = true;
  if (timezone !== null) c.timezone = timezone;
  // Normalize.
  if (c.timezone === 'UTC') {
    c.utc = true;
    c.timezone = null;
  }
  if (c.weekdays <= 0 || c.weekdays >= BITS_WEEKDAYS) c.weekdays = -1;
  if (c.endOfMonth && !c.day) c.endOfMonth = false;
  fixYear(c.year);
  c.year = normalizeChain(c.year);
  c.month = normalizeChain(c.month);
  c.day = normalizeChain(c.day);
  c.hour = normalizeChain(c.hour);
  c.minute = normalizeChain(c.minute);
  c.usec = normalizeChain(c.usec);
  // Validate.
  checkChain(spec, 'year', c.year, MIN_YEAR, MAX_YEAR, false);
  checkChain(spec, 'month', c.month, 1, 12, false);
  checkChain(spec, 'day', c.day, 1, 31, c.endOfMonth);
  checkChain(spec, 'hour', c.hour, 0, 23, false);
  checkChain(spec, 'minute', c.minute, 0, 59, false);
  checkChain(spec, 'second', c.usec, 0, 60 * USEC_PER_SEC - 1, false);
  return c;
}

function formatWeekdays(bits: number): string {
  let out = '';
  let l = -1;
  let x = 0;
  const close = (): void => {
    if (x > l + 1) out += (x > l + 2 ? '..' : ',') + DAY_ABBR[x - 1];
  };
  for (; x < 7; x++) {
    if (bits & (1 << x)) {
      if (l < 0) {
        if (out) out += ',';
        out += DAY_ABBR[x];
        l = x;
      }
    } else if (l >= 0) {
      close();
      l = -1;
    }
  }
  if (l >= 0) close();
  return out;
}

const pad = (v: number, width: number): string => String(v).padStart(width, '0');
const frac = (v: number): string => String(v).padStart(6, '0');

function formatChain(chain: Chain, width: number, usec: boolean): string {
  const d = usec ? USEC_PER_SEC : 1;
  if (!chain) return '*';
  const first = chain[0]!;
  if (usec && chain.length === 1 && first.start === 0 && first.repeat === USEC_PER_SEC && first.stop === -1) return '*';
  return chain
    .map((c) => {
      let out = pad(Math.trunc(c.start / d), width);
      if (c.start % d > 0) out += '.' + frac(c.start % d);
      if (c.stop > 0) out += '..' + pad(Math.trunc(c.stop / d), width);
      if (c.stop % d > 0) out += '.' + frac(c.stop % d);
      if (c.repeat > 0 && !(c.stop > 0 && c.repeat === d)) out += '/' + Math.trunc(c.repeat / d);
      if (c.repeat % d > 0) out += '.' + frac(c.repeat % d);
      return out;
    })
    .join(',');
}

/** The canonical text of a calendar event (systemd's "Normalized form"). */
export function formatCalendarSpec(c: CalendarSpec): string {
  let out = '';
  if (c.weekdays > 0 && c.weekdays <= BITS_WEEKDAYS) out += formatWeekdays(c.weekdays) + ' ';
  out += formatChain(c.year, 4, false) + '-' + formatChain(c.month, 2, false);
  out += (c.endOfMonth ? '~' : '-') + formatChain(c.day, 2, false) + ' ';
  out += formatChain(c.hour, 2, false) + ':' + formatChain(c.minute, 2, false) + ':';
  out += formatChain(c.usec, 2, true);
  if (c.utc) out += ' UTC';
  else if (c.timezone !== null) out += ' ' + c.timezone;
  return out;
}
