/**
 * The Lua scripts build every key name with the builders generated from src/redis/keys.ts
 * (`KEY.job(prefix, id)`, expandKeyBuilders), never by concatenation: as test/structure/keys.test.ts
 * checks for TypeScript, the key layout has one definition. The key parts looked for are
 * derived from the builders, so a key added to keys.ts is checked too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { expandKeyBuilders, GROUP_LISTS, luaKeyBuilders } from '../../src/redis/keys.js';
import { LUA_DIR, luaFiles } from '../helpers/lua.js';

/**
 * Lua files allowed to build a key by concatenation, each with why (`file: reason`). An entry
 * whose file no longer builds one fails the test: remove it then.
 */
const ALLOWED: Record<string, string> = {};

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const QUOTE = `['"]`;

/** The patterns of a key name built by hand, each with what it finds. */
function keyPatterns(): Array<{ what: string; re: RegExp }> {
  const out: Array<{ what: string; re: RegExp }> = [
    // prefix .. 'j:' .. id, at.prefix .. name
    { what: 'text after the key prefix', re: /\bprefix\s*\.\.(?!\.)/ },
    // x .. prefix
    { what: 'text before the key prefix', re: /(?<!\.)\.\.\s*[\w.]*\bprefix\b/ },
    // KEY.job(prefix, id) .. ':x'
    { what: 'text after a key', re: /\bKEY\.\w+\((?:[^()]|\([^()]*\))*\)\s*\.\.(?!\.)/ },
    { what: 'text before a key', re: /(?<!\.)\.\.\s*KEY\./ },
    { what: 'the hash tag', re: new RegExp(`${QUOTE}\\{rota:`) },
  ];
  const heads = new Set<string>();
  const tails = new Set<string>(GROUP_LISTS.map((l) => `:${l}`));
  for (const { parts } of luaKeyBuilders()) {
    for (const p of parts) {
      if (typeof p !== 'string' || p === ':') continue;
      if (p.endsWith(':')) heads.add(p);
      if (p.startsWith(':')) tails.add(p);
    }
  }
  // 'j:' .. id, 'p:t:' .. id
  for (const h of heads) out.push({ what: `key part ${h}`, re: new RegExp(`${QUOTE}${esc(h)}${QUOTE}\\s*\\.\\.(?!\\.)`) });
  // g .. ':rl', gk .. (high and ':h' or ':l')
  for (const t of tails) {
    out.push({ what: `key suffix ${t}`, re: new RegExp(`(?<!\\.)\\.\\.\\s*${QUOTE}${esc(t)}${QUOTE}`) });
    out.push({ what: `key suffix ${t}`, re: new RegExp(`(?<!\\.)\\.\\.\\s*\\([^()]*${QUOTE}${esc(t)}${QUOTE}`) });
  }
  return out;
}

/** `text` without its comments (`--[[ ... ]]` and `-- ...`), lines kept. */
function code(text: string): string {
  return text
    .replace(/--\[\[[\s\S]*?\]\]/g, (c) => c.replace(/[^\n]/g, ''))
    .split('\n')
    .map((line) => {
      // (a `--` outside a string begins a comment)
      let quote = '';
      for (let i = 0; i < line.length; i++) {
        const c = line[i];
        if (quote) {
          if (c === '\\') i++;
          else if (c === quote) quote = '';
        } else if (c === "'" || c === '"') quote = c;
        else if (c === '-' && line[i + 1] === '-') return line.slice(0, i);
      }
      return line;
    })
    .join('\n');
}

function offences(text: string, patterns: ReadonlyArray<{ what: string; re: RegExp }>): string[] {
  const out: string[] = [];
  code(text)
    .split('\n')
    .forEach((line, i) => {
      for (const { what, re } of patterns) if (re.test(line)) out.push(`${i + 1}: ${what}: ${line.trim()}`);
    });
  return out;
}

describe('Lua key names', () => {
  it('find a key built by hand, in the forms the scripts used to build them', () => {
    const patterns = keyPatterns();
    const built = [
      "local jobKey = prefix .. 'j:' .. id",
      "call('DEL', at.prefix .. 'fan:' .. token .. ':' .. id)",
      "call('LPUSH', prefix .. 'g:' .. group .. (high and ':h' or ':l'), id)",
      "call('LREM', gk .. ':r', '-1', id)",
      "keys[#keys + 1] = g .. ':rl'",
      "call('ZSCAN', prefix .. HELD_SETS[set], at, 'COUNT', count)",
      "local lists = 'g:' .. name",
      "minuteKey = prefix .. 'hist:m:' .. string.format('%d', minute)",
      "local key = KEY.groupList(prefix, g, 'h') .. ':x'",
      "local k = '{rota:' .. queue .. '}:meta'",
      "local tk = 'p:t:' .. id",
    ];
    const plain = [
      'local jobKey = KEY.job(prefix, id)',
      "call('LPUSH', KEY.groupList(prefix, group, high and 'h' or 'l'), id)",
      "nextCursor = (set + 1) .. ':0'",
      "note = note .. ': ' .. err",
      'local member = token .. SCHEDULED_MARK .. id',
      "call('ZADD', KEY.pHistory(prefix, id), at, HISTORY_MARK.failed .. at .. '@' .. f.failure)",
      "return 'jobs of group \"' .. records[i] .. '\"'",
      "local s = 'prefix' -- prefix .. 'j:' .. id",
    ];
    for (const line of built) expect(offences(line, patterns), line).not.toEqual([]);
    for (const line of plain) expect(offences(line, patterns), line).toEqual([]);
  });

  it('are built with the generated builders in every script and include', () => {
    const patterns = keyPatterns();
    const found: Record<string, string[]> = {};
    for (const f of luaFiles) {
      const lines = offences(readFileSync(join(LUA_DIR, f), 'utf8'), patterns);
      if (lines.length > 0) found[f] = lines;
    }
    expect(Object.fromEntries(Object.entries(found).filter(([f]) => !(f in ALLOWED)))).toEqual({});
    for (const f of Object.keys(ALLOWED)) expect(found[f], `${f} is allowed but builds no key`).toBeDefined();
  });

  it('are expanded by the library builder into the names they stand for, comments left as they are', () => {
    expect(expandKeyBuilders('local k = KEY.job(prefix, f[i + 1]) -- KEY.nope(x)', 't')).toBe(
      "local k = (prefix .. 'j:' .. f[i + 1]) -- KEY.nope(x)",
    );
    expect(expandKeyBuilders("call('LPUSH', KEY.groupList(at.prefix, str(g), high and 'h' or 'l'), id)", 't')).toBe(
      "call('LPUSH', (at.prefix .. 'g:' .. str(g) .. (high and ':h' or ':l')), id)",
    );
    expect(expandKeyBuilders("f(KEY.fanStaging(prefix, id, t), KEY.pTask(prefix, 'a,b'))", 't')).toBe(
      "f((prefix .. 'fan:' .. t .. ':' .. id), (prefix .. 'p:t:a,b'))",
    );
    expect(expandKeyBuilders('--[[\n  KEY.nope(prefix)\n]]\nlocal m = KEY.meta(prefix)', 't')).toBe(
      "--[[\n  KEY.nope(prefix)\n]]\nlocal m = (prefix .. 'meta')",
    );
    // (literal arguments joined to the text beside them, as the scripts wrote the names by hand)
    expect(expandKeyBuilders('local k = KEY.groupList(prefix, g, \'r\'), KEY.done(prefix, "failed")', 't')).toBe(
      "local k = (prefix .. 'g:' .. g .. ':r'), (prefix .. 'done:failed')",
    );
    expect(expandKeyBuilders('local k = KEY.groupList(prefix, a or b, c and d)', 't')).toBe(
      "local k = (prefix .. 'g:' .. (a or b) .. ':' .. (c and d))",
    );
    expect(() => expandKeyBuilders('local k = KEY.nope(prefix)', 't')).toThrow(/t\.lua:1: KEY\.nope is no key builder/);
    expect(() => expandKeyBuilders('local k = KEY.job(prefix)', 't')).toThrow(/KEY\.job takes the prefix and 1 argument/);
    expect(() => expandKeyBuilders('local k = KEY.job(prefix,', 't')).toThrow(/not closed/);
  });

  it('name only builders that exist', () => {
    const names = new Set(luaKeyBuilders().map((b) => b.name));
    const unknown: string[] = [];
    for (const f of luaFiles) {
      for (const m of code(readFileSync(join(LUA_DIR, f), 'utf8')).matchAll(/\bKEY(?:\.(\w+)|\s*\[)/g)) {
        if (!m[1] || !names.has(m[1])) unknown.push(`${f}: ${m[0]}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
