/**
 * The README's quick start is examples/quick-start.ts, word for word, and it runs as written
 * against a real Redis: it ends by itself, and prints what its comments say.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TS_EXEC_ARGV } from '../helpers/processes.js';
import { redisUrl } from '../helpers/setup.js';

const ROOT = new URL('../../', import.meta.url);
const EXAMPLE = readFileSync(new URL('examples/quick-start.ts', ROOT), 'utf8');

/** The code block of the README's "Quick start" section. */
function readmeQuickStart(): string {
  const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Quick start\n'));
  const block = section && /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README.md has no ts block under "## Quick start"');
  return block;
}

describe('the quick start', () => {
  it('is examples/quick-start.ts', () => {
    expect(readmeQuickStart()).toBe(EXAMPLE);
  });

  it('runs as written, ends by itself and prints what its comments say', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rota-quick-start-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    // (the package's name stands for its sources here)
    const file = join(dir, 'quick-start.mts');
    const index = pathToFileURL(new URL('src/index.ts', ROOT).pathname).href;
    writeFileSync(file, EXAMPLE.replace("from 'rota';", `from '${index}';`));
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [...TS_EXEC_ARGV, file],
        { env: { ...process.env, REDIS_URL: redisUrl() }, timeout: 30_000, killSignal: 'SIGKILL' },
        (err, out, errOut) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout: out, stderr: errOut }),
      );
    });
    // (a program that never ends is killed at the timeout: its code is then not 0)
    expect(code, stderr).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('waiting');
    expect(lines[1]).toBe('success { sent: true }');
    expect(lines.slice(2).join(' ')).toMatch(/waiting: 0,.*success: [1-9]/);
  });
});
