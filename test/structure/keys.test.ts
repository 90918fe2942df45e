/**
 * Redis key names are built in src/redis/ only (./keys.ts and the stores): no other module may
 * put a key together, so that the key layout (docs/architecture.md) has one place. The parts of
 * every key are derived from the key builders themselves, so a key added there is checked too.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as redisKeys from '../../src/redis/keys.js';

const ROOT = join(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

/**
 * Files allowed to build keys outside src/redis/ for now, each with why. An entry whose file no
 * longer builds a key fails the test: remove it then.
 */
const ALLOWED: Record<string, string> = {};

/** Stands for an argument of a key builder in the names it builds. */
const ARG = '\u0001';

type KeyBuilder = (name: string) => Record<string, unknown>;

/** The key builders: every `...Keys(name)` export of src/redis/keys.ts. */
function builders(): KeyBuilder[] {
  const out: KeyBuilder[] = [];
  for (const [name, value] of Object.entries(redisKeys)) {
    if (/Keys$/.test(name) && typeof value === 'function') out.push(value as KeyBuilder);
  }
  return out;
}

/**
 * The literal parts of every key name the builders make, past the queue's prefix: `j:`, `g:`,
 * `:h`, `:rl`, `meta`, `p:t:`... (a lone `:` is left out: it is in too much text).
 */
async function keyParts(): Promise<string[]> {
  const parts = new Set<string>();
  for (const build of builders()) {
    const keys = build('q');
    const prefix = String(keys.prefix);
    const names: string[] = [];
    for (const [field, value] of Object.entries(keys)) {
      if (field === 'prefix') continue;
      if (typeof value === 'string') names.push(value);
      else if (typeof value === 'function') {
        const fn = value as (...args: string[]) => string;
        if (field === 'groupList') for (const list of redisKeys.GROUP_LISTS) names.push(fn(ARG, list));
        else names.push(fn(...Array.from({ length: Math.max(1, fn.length) }, () => ARG)));
      }
    }
    for (const n of names) {
      expect(n.startsWith(prefix), n).toBe(true);
      for (const p of n.slice(prefix.length).split(ARG)) if (p !== '' && p !== ':') parts.add(p);
    }
  }
  return [...parts];
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The patterns that build a key from `parts`: each matches code that puts a key part next to a variable. */
function keyPatterns(parts: readonly string[]): Array<{ what: string; re: RegExp }> {
  const edge = '(?:\\}|[\'"`])';
  const out: Array<{ what: string; re: RegExp }> = [];
  for (const p of parts) {
    if (p.endsWith(':')) {
      // `${prefix}j:${id}`, 'j:' + id
      out.push({ what: `key part ${p}`, re: new RegExp(`${edge}${esc(p)}(?:\\$\\{|['"\`])`) });
    } else if (p.startsWith(':')) {
      // `${groupKey}:h`, key + ':h'
      out.push({ what: `key suffix ${p}`, re: new RegExp(`(?:\\}${esc(p)}(?![\\w-])|['"\`]${esc(p)}['"\`])`) });
    } else {
      // `${prefix}meta`
      out.push({ what: `key name ${p}`, re: new RegExp(`\\}${esc(p)}(?![\\w-])`) });
      if (p.includes(':')) out.push({ what: `key name ${p}`, re: new RegExp(`['"\`]${esc(p)}['"\`]`) });
    }
  }
  // a key prefix with something after it: `${keys.prefix}${set}`, prefix + 'x'
  out.push({ what: 'text after a key prefix', re: /\$\{[^}`]*\bprefix\}(?!`)|\bprefix\s*\+/ });
  // a key of ./keys.ts with something after it: `${keys.group(g)}:${list}`
  out.push({ what: 'text after a key', re: /\$\{[^}`]*\b(?:keys|qkeys|Keys)\.(?!length\b)\w+(?:\([^)`]*\))?\}(?!`)/ });
  // the hash tag every key starts with
  out.push({ what: 'the hash tag', re: /['"`]\{rota:/ });
  return out;
}

/** `text` without its comments (so that a key named in a doc comment is no offence). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1');
}

/** The lines of `text` that match a pattern, as `line: what`. */
function offences(text: string, patterns: ReadonlyArray<{ what: string; re: RegExp }>): string[] {
  const out: string[] = [];
  code(text)
    .split('\n')
    .forEach((line, i) => {
      for (const { what, re } of patterns) if (re.test(line)) out.push(`${i + 1}: ${what}: ${line.trim()}`);
    });
  return out;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

describe('Redis keys', () => {
  it('derives the parts of every key from the key builders', async () => {
    const parts = await keyParts();
    for (const p of ['meta', 'seq', 'j:', 'log:', 'g:', ':h', ':l', ':r', ':rl', 'done:', 'w:']) expect(parts).toContain(p);
    for (const p of ['p:t:', 'p:h:', 'p:owner:', 'p:rule:', 'p:ev:']) expect(parts).toContain(p);
  });

  it('finds a key built by hand, in the forms Rota used to build them', async () => {
    const patterns = keyPatterns(await keyParts());
    const lines = readFileSync(join(import.meta.dirname, 'key-lines.txt'), 'utf8').split('\n');
    const at = (label: string) => lines.indexOf(label);
    const built = lines.slice(at('built:') + 1, at('plain:'));
    const plain = lines.slice(at('plain:') + 1).filter((l) => l !== '');
    expect(built.length).toBeGreaterThan(5);
    for (const line of built) expect(offences(line, patterns), line).not.toEqual([]);
    for (const line of plain) expect(offences(line, patterns), line).toEqual([]);
  });

  it('are built in src/redis/ only', async () => {
    const patterns = keyPatterns(await keyParts());
    const found: Record<string, string[]> = {};
    for (const file of sourceFiles(SRC)) {
      const rel = relative(ROOT, file).split('\\').join('/');
      if (rel.startsWith('src/redis/')) continue;
      const lines = offences(readFileSync(file, 'utf8'), patterns);
      if (lines.length > 0) found[rel] = lines;
    }
    const unexpected = Object.fromEntries(Object.entries(found).filter(([f]) => !(f in ALLOWED)));
    expect(unexpected).toEqual({});
    // (an entry whose file builds no key any more is stale)
    for (const file of Object.keys(ALLOWED)) {
      if (existsSync(join(ROOT, file))) expect(found[file], `${file} is allowed but builds no key`).toBeDefined();
    }
  });
});
