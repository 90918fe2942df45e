#!/usr/bin/env node
/**
 * Checks the Lua of the function library with luacheck (Debian package `lua-check`), in two passes:
 *
 * 1. The library as Redis loads it (the builder's own code, src/redis/library.ts): the wire
 *    values, each include once in its block after the declaration of its exports, then each
 *    script as a function of (KEYS, ARGV). luacheck sees the whole program, so it finds unused
 *    variables and functions (a helper no script calls), names used before they are defined,
 *    shadowing, and a name an include keeps to itself (does not `--- @export`) used elsewhere:
 *    an undefined variable there.
 * 2. Each file alone, with the exports of the includes its `--- @include` lines name (directly or
 *    through the includes those name) as its only known names: a file that uses a name without
 *    declaring the include that exports it fails here, even when the library defines it earlier.
 *    An export that no other file uses fails too (an include exports only what others use).
 *
 * Lines are reported as lua/<file>:<line>. Runs through tsx (it uses the builder in src/).
 * Settings: .luacheckrc. Exit code 1 when luacheck reports anything.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const luaDir = process.argv[2] ?? join(root, 'lua');
const config = join(root, '.luacheckrc');
// (run through tsx, see package.json: the builder is TypeScript)
const { CALL_START, WIRE_INCLUDE, declaredExports, libraryChunks, libraryParts, topLevelNames } = await import(
  '../src/redis/library.ts'
);
const { WIRE_SCALARS } = await import('../src/redis/wire.ts');

const INCLUDE = /^--- @include "([^"]+)"/gm;
const REPORT = /^(.*?):(\d+):(\d+): (.*)$/;
const VARIABLE = /^\(W11[123]\) .* variable '([A-Za-z_]\w*)'/;

/** Runs luacheck on `files` (options that take lists last); answers its report lines. */
function luacheck(files, extra = []) {
  const r = spawnSync('luacheck', [...files, '--config', config, '--formatter', 'plain', '--codes', ...extra], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.error) {
    console.error(`lint-lua: cannot run luacheck (${r.error.message}); install it: apt-get install lua-check`);
    process.exit(2);
  }
  if (r.status > 1 && !r.stdout.trim()) {
    console.error(r.stderr || `luacheck exited with ${r.status}`);
    process.exit(2);
  }
  return r.stdout.split('\n').filter((l) => l.trim() !== '');
}

const { includes, scripts } = libraryParts(luaDir);
const includeText = new Map(includes);
/** Where a report names a file: lua/<file>.lua (the generated wire include: its source). */
const display = (file) => (file === WIRE_INCLUDE ? `${file} (src/redis/wire.ts)` : relative(root, join(luaDir, `${file}.lua`)));
/** The include whose top level declares each name, exported or not (the last one, for a private name two keep). */
const definedBy = new Map(includes.flatMap(([inc, text]) => topLevelNames(text).map(([n]) => [n, inc])));
/** What each include exports: the wire include, all its values (its numbers and strings are written where named). */
const exportsOf = new Map(
  includes.map(([inc, text]) => [
    inc,
    inc === WIRE_INCLUDE ? [...topLevelNames(text).map(([n]) => n), ...WIRE_SCALARS.keys()] : declaredExports(text),
  ]),
);
const problems = [];

// Pass 1: the library as built, with each of its lines mapped back to its file.
const lines = [];
const origin = [];
for (const { file, text, source } of libraryChunks(luaDir, 'rota_lint').chunks) {
  text.split('\n').forEach((line, i) => {
    lines.push(line);
    origin.push(source ? `${display(file)}:${i + 1}` : `${display(file)} (the library's lines around it)`);
  });
}
/** A hint for a name the library does not know where it is used: the include that keeps it to itself. */
function unexported(report) {
  const name = VARIABLE.exec(report)?.[1];
  const inc = name && definedBy.get(name);
  if (!inc || exportsOf.get(inc).includes(name)) return '';
  return ` (${inc} declares it but does not export it: add it to its --- @export lines)`;
}
const tmp = mkdtempSync(join(tmpdir(), 'lint-lua-'));
try {
  const libraryFile = join(tmp, 'library.lua');
  writeFileSync(libraryFile, lines.join('\n'));
  for (const report of luacheck([libraryFile])) {
    const m = REPORT.exec(report);
    // (a message's own line numbers are of the library too)
    if (m)
      problems.push(
        `${origin[Number(m[2]) - 1]}:${m[3]}: ${m[4].replace(/on line (\d+)/g, (_, n) => `at ${origin[Number(n) - 1]}`)}${unexported(m[4])}`,
      );
    else if (!/^Total:/.test(report)) problems.push(report);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

// Pass 2: each file with the exports of the includes it declares (those they declare, and so
// on) as its known names; luacheck reports every name a file uses and does not define, and
// those that are not known are problems.
function declared(text, seen = new Set()) {
  for (const m of text.matchAll(INCLUDE)) {
    if (seen.has(m[1])) continue;
    seen.add(m[1]);
    declared(includeText.get(m[1]) ?? '', seen);
  }
  return seen;
}
/** The exports used by some other file (or by the library's own lines: every call's start). */
const used = new Set([CALL_START]);
const files = [...includes.map(([name, text]) => [name, text, false]), ...scripts.map(([name, text]) => [name, text, true])];
for (const [name, text, isScript] of files) {
  if (name === WIRE_INCLUDE) continue;
  const known = new Set([...declared(text)].flatMap((inc) => exportsOf.get(inc) ?? []));
  if (isScript) known.add('KEYS').add('ARGV');
  // (the key builders, KEY.<name>(...), which the builder expands where they are called: src/redis/keys.ts)
  known.add('KEY');
  for (const report of luacheck([join(luaDir, `${name}.lua`)], ['--only', '111', '112', '113'])) {
    const m = REPORT.exec(report);
    if (!m) continue;
    const variable = VARIABLE.exec(m[4])?.[1];
    if (variable && known.has(variable)) {
      used.add(variable);
      continue;
    }
    const message = m[4].replace('undefined variable', 'a name no declared include exports');
    problems.push(`${display(name)}:${m[2]}:${m[3]}: ${message}${variable ? unexported(m[4]) : ''}`);
  }
}
for (const [inc, names] of exportsOf) {
  if (inc === WIRE_INCLUDE) continue;
  for (const n of names) if (!used.has(n)) problems.push(`${display(inc)}: exports ${n}, which no other file uses`);
}

if (problems.length) {
  for (const p of problems) console.log(p);
  console.log(`\n${problems.length} problem${problems.length > 1 ? 's' : ''} in the library's Lua`);
  process.exit(1);
}
console.log(`lua: ${includes.length} includes and ${scripts.length} scripts checked, no problems`);
