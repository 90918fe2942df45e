#!/usr/bin/env node
/**
 * Checks the Lua of the function library with luacheck (Debian package `lua-check`), in two passes:
 *
 * 1. The library as Redis loads it: every include once, in the builder's order, then each script
 *    as a function of (KEYS, ARGV). luacheck sees the whole program, so it finds unused variables
 *    and functions (a helper no script calls), names used before they are defined, and shadowing.
 * 2. Each file alone, with the names its `--- @include` lines provide (directly or through the
 *    includes those name) as its only known names: a file that uses a name without declaring the
 *    include that defines it fails here, even when the library happens to define it earlier.
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
const luaDir = join(root, 'lua');
const config = join(root, '.luacheckrc');
// (run through tsx, see package.json: the builder is TypeScript)
const { libraryParts } = await import('../src/redis/library.ts');

const INCLUDE = /^--- @include "([^"]+)"/gm;
const REPORT = /^(.*?):(\d+):(\d+): (.*)$/;

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

/** The names a file defines for the files after it: its top-level locals. */
function topLevelNames(text) {
  const names = [];
  for (const line of text.split('\n')) {
    let m = /^local function ([A-Za-z_]\w*)/.exec(line);
    if (m) {
      names.push(m[1]);
      continue;
    }
    m = /^local ([A-Za-z_][\w\s,]*?)\s*(=|--|$)/.exec(line);
    if (m)
      names.push(
        ...m[1]
          .split(',')
          .map((n) => n.trim())
          .filter(Boolean),
      );
  }
  return names;
}

const { includes, scripts } = libraryParts(luaDir);
const includeText = new Map(includes);
const problems = [];

// Pass 1: the library, with each of its lines mapped back to its file.
const lines = [];
const origin = [];
const add = (text, file) =>
  text.split('\n').forEach((line, i) => {
    lines.push(line);
    origin.push(`lua/${file}.lua:${i + 1}`);
  });
for (const [name, text] of includes) add(text, name);
for (const [script, text] of scripts) {
  lines.push(`redis.register_function('${script}', function(KEYS, ARGV) -- luacheck: ignore 212`, 'beginCall()');
  origin.push(`lua/${script}.lua:1`, `lua/${script}.lua:1`);
  add(text, script);
  lines.push('end)');
  origin.push(`lua/${script}.lua:end`);
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
        `${origin[Number(m[2]) - 1]}:${m[3]}: ${m[4].replace(/on line (\d+)/g, (_, n) => `at ${origin[Number(n) - 1]}`)}`,
      );
    else if (!/^Total:/.test(report)) problems.push(report);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

// Pass 2: each file with the names of the includes it declares (those they declare, and so on).
function declared(text, seen = new Set()) {
  for (const m of text.matchAll(INCLUDE)) {
    if (seen.has(m[1])) continue;
    seen.add(m[1]);
    declared(includeText.get(m[1]) ?? '', seen);
  }
  return seen;
}
const files = [...includes.map(([name, text]) => [name, text, false]), ...scripts.map(([name, text]) => [name, text, true])];
for (const [name, text, isScript] of files) {
  const known = [...declared(text)].flatMap((inc) => topLevelNames(includeText.get(inc) ?? ''));
  if (isScript) known.push('KEYS', 'ARGV');
  const file = join(luaDir, `${name}.lua`);
  const globals = known.length ? ['--globals', ...known] : [];
  for (const report of luacheck([file], ['--only', '111', '112', '113', ...globals])) {
    const m = REPORT.exec(report);
    if (!m) continue;
    problems.push(
      `${relative(root, m[1])}:${m[2]}:${m[3]}: ${m[4].replace('undefined variable', 'a name no declared include defines')}`,
    );
  }
}

if (problems.length) {
  for (const p of problems) console.log(p);
  console.log(`\n${problems.length} problem${problems.length > 1 ? 's' : ''} in the library's Lua`);
  process.exit(1);
}
console.log(`lua: ${includes.length} includes and ${scripts.length} scripts checked, no problems`);
