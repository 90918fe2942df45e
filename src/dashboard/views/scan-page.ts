/**
 * Paging through a set by SSCAN, a bounded step at a time: a page is the ids of one or more
 * scan steps (sorted). Its place is `<cursor>.<skip>`: the scan's cursor the page
 * starts from, and the ids of that step (in sorted order) already shown (a step may give more ids than a page
 * holds: a small set is given whole by its first step). A set that changed between two pages
 * may have an id shown twice or passed over, as SSCAN gives them; every id present all along is
 * on some page.
 */

/** One scan step: the cursor to go on from (`'0'`: the scan is over) and the ids. */
export type ScanStep = (cursor: string, count: number) => Promise<{ cursor: string; ids: string[] }>;

/** Scan steps one page reads at most (a step may find nothing where the set shrank). */
export const MOST_STEPS = 10;

/** A page's place read from a `start` parameter; the first page for anything the dashboard did not write. */
export function placeOf(start: string | null): { cursor: string; skip: number } {
  const m = /^(\d{1,20})\.(\d{1,6})$/.exec(start ?? '');
  if (!m || BigInt(m[1]) >= 2n ** 64n) return { cursor: '0', skip: 0 };
  return { cursor: m[1] === '0' ? '0' : m[1].replace(/^0+/, ''), skip: Number(m[2]) };
}

/**
 * The ids of the page at `start` (at most `limit`, sorted) and the place of the next page
 * (undefined: this is the last).
 */
export async function scanPage(step: ScanStep, start: string | null, limit: number): Promise<{ ids: string[]; next?: string }> {
  let { cursor, skip } = placeOf(start);
  const ids: string[] = [];
  for (let steps = 0; steps < MOST_STEPS; steps++) {
    const got = await step(cursor, limit);
    const rest = [...new Set(got.ids)].sort().slice(skip);
    const room = limit - ids.length;
    if (rest.length > room) {
      ids.push(...rest.slice(0, room));
      return { ids: ids.sort(), next: `${cursor}.${skip + room}` };
    }
    ids.push(...rest);
    skip = 0;
    if (got.cursor === '0') return { ids: ids.sort() };
    cursor = got.cursor;
    if (ids.length === limit) break;
  }
  return { ids: ids.sort(), next: `${cursor}.0` };
}
