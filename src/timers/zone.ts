/**
 * IANA time-zone support on top of Intl.DateTimeFormat: validity checks and
 * UTC offsets at an instant, cached per hour so that searches stay fast.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();
interface OffsetCache {
  /** Day number → offset, or NaN when the offset changes that day. */
  days: Map<number, number>;
  /** Hour number → offset, or NaN when it changes within that hour. */
  hours: Map<number, number>;
}
const offsetCaches = new Map<string, OffsetCache>();
const CACHE_LIMIT = 50_000;
const MIXED = Number.NaN;

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formatters.set(zone, f);
  }
  return f;
}

const ZONE_NAME = /^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+)*$/;

/**
 * Whether `name` is an IANA zone name this runtime knows, spelled with its
 * proper letter case (`Europe/Paris`, not `europe/paris`), as a zoneinfo file
 * name would have to be.
 */
export function isValidTimeZone(name: string): boolean {
  if (!ZONE_NAME.test(name) || name.split('/').some((seg) => seg.startsWith('.'))) return false;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return false;
  }
  // Intl matches names case-insensitively; zoneinfo files do not.
  return resolved === name || resolved.toLowerCase() !== name.toLowerCase();
}

function exactOffset(zone: string, epochSec: number): number {
  const parts = formatter(zone).formatToParts(new Date(epochSec * 1000));
  // (the parts by type: year, month, day, hour, minute, second and era)
  const part = new Map(parts.map((p) => [p.type, p.value]));
  const n = (type: Intl.DateTimeFormatPartTypes) => Number(part.get(type) ?? 0);
  const year = n('year');
  const y = part.get('era')?.startsWith('B') ? 1 - year : year;
  const wall = new Date(0);
  wall.setUTCFullYear(y, n('month') - 1, n('day'));
  wall.setUTCHours(n('hour'), n('minute'), n('second'), 0);
  return Math.round(wall.getTime() / 1000 - epochSec);
}

/** Offset of `zone` from UTC, in seconds east, at the instant `epochSec`. */
export function zoneOffset(zone: string, epochSec: number): number {
  return offsetLookup(zone)(epochSec);
}

/** A fast offset function for one zone (seconds east of UTC at an instant in seconds). */
export function offsetLookup(zone: string): (epochSec: number) => number {
  let cache = offsetCaches.get(zone);
  if (!cache) {
    cache = { days: new Map(), hours: new Map() };
    offsetCaches.set(zone, cache);
  }
  const c = cache;
  return (epochSec: number) => cachedOffset(zone, c, epochSec);
}

function cachedOffset(zone: string, cache: OffsetCache, epochSec: number): number {
  const t = Math.floor(epochSec);
  // A day's offset is cached when constant all day; otherwise its hours, else the exact second.
  const daily = spanOffset(zone, cache.days, Math.floor(t / 86400), 86400);
  if (!Number.isNaN(daily)) return daily;
  const hourly = spanOffset(zone, cache.hours, Math.floor(t / 3600), 3600);
  return Number.isNaN(hourly) ? exactOffset(zone, t) : hourly;
}

/** The offset over span `index` of `seconds` (MIXED when it changes within), from `spans` or worked out and kept there. */
function spanOffset(zone: string, spans: Map<number, number>, index: number, seconds: number): number {
  let offset = spans.get(index);
  if (offset === undefined) {
    const a = exactOffset(zone, index * seconds);
    const b = exactOffset(zone, index * seconds + seconds - 1);
    offset = a === b ? a : MIXED;
    if (spans.size >= CACHE_LIMIT) spans.clear();
    spans.set(index, offset);
  }
  return offset;
}
