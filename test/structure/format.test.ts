/**
 * docs/format.md is the data format written down, and stays what the code writes: every key of
 * src/redis/keys.ts, every wire value of src/redis/wire.ts with its value, the description's
 * field order, the schema fields and versions, the events' fields and a periodic task's fields
 * are on the page; and docs/upgrading.md's table gives this build's versions.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { luaKeyBuilders } from '../../src/redis/keys.js';
import { definitionFields, type TaskRecord } from '../../src/redis/periodic-codec.js';
import { DESCRIPTION, LUA_WIRE, META, SCHEMA_READS_FROM, SCHEMA_VERSION } from '../../src/redis/wire.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const format = read('docs/format.md');
/** The text of the page's section under heading `heading` (to the next heading of its level or above). */
function section(heading: string): string {
  const at = format.indexOf(`${heading}\n`);
  expect(at, `format.md has a section "${heading}"`).toBeGreaterThanOrEqual(0);
  const level = /^#+/.exec(heading)![0].length;
  const rest = format.slice(at + heading.length);
  const end = rest.search(new RegExp(`\\n#{1,${level}} `));
  return end < 0 ? rest : rest.slice(0, end);
}

describe('docs/format.md', () => {
  it('names every key of src/redis/keys.ts, as it is built after the prefix', () => {
    const keys = `${section('### Queue keys')}${section('### Periodic keys')}${section('## Lifetimes')}`;
    for (const b of luaKeyBuilders()) {
      // (a fixed name in full; a built one by its text up to the first argument: `j:`, `p:t:`, `hist:m:`)
      const head = b.parts[0];
      const shown = typeof head === 'string' ? (b.params.length ? `\`${head}` : `\`${head}\``) : null;
      expect(shown, `key ${b.name} begins with text`).not.toBeNull();
      expect(keys.includes(shown!), `key ${b.name} (${String(head)}...) is on the page`).toBe(true);
    }
  });

  it('gives every wire value of src/redis/wire.ts with its value, and no other', () => {
    const rows = new Map(
      [...section('### Wire numbers and strings').matchAll(/^\| `(\w+)` \| `(.*)` \| (stored|call) \|$/gm)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    for (const [name, value] of Object.entries(LUA_WIRE)) {
      expect(rows.get(name), `wire value ${name}`).toBe(JSON.stringify(value).replace(/\|/g, '\\|'));
    }
    expect([...rows.keys()].sort()).toEqual(Object.keys(LUA_WIRE).sort());
  });

  it("gives the description's fields in their order, and the schema's fields and versions", () => {
    expect(section('### The job hash')).toContain(`    ${DESCRIPTION.join(', ')}\n`);
    const schema = section('## The schema version');
    for (const field of Object.values(META)) expect(schema).toContain(`| \`${field}\` |`);
    expect(schema).toContain(
      `writes schema ${SCHEMA_VERSION} (\`SCHEMA_VERSION\`) and reads recorded schemas from ${SCHEMA_READS_FROM}`,
    );
    expect(format).toContain(`schema version ${SCHEMA_VERSION}:`);
    // (the rule's table: a row of this build's versions)
    expect(read('docs/upgrading.md')).toMatch(
      new RegExp(`^\\| [\\d.]+ \\| ${SCHEMA_VERSION} \\| ${SCHEMA_READS_FROM} \\|$`, 'm'),
    );
  });

  it("lists every events field and a periodic task's definition fields", () => {
    const events = section('### The events stream');
    for (const field of Object.values(LUA_WIRE.EVENT_FIELD as Record<string, string>))
      expect(events).toContain(`| \`${field}\` |`);
    const record = { enabled: true, packedArgs: Buffer.alloc(0) } as unknown as TaskRecord;
    const fields = definitionFields(record, 0).filter((_, i) => i % 2 === 0) as string[];
    const periodic = section('### Periodic tasks');
    for (const f of fields) expect(periodic, `task field ${f}`).toContain(`\`${f}\``);
  });
});
