/**
 * Debian's chromium driven by playwright-core, for the dashboard's browser tests: where it is,
 * how it is launched, and a page opened with its script and console errors recorded.
 */
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Where the tests find chromium; a file whose browser is missing skips its tests. */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/** Launches chromium headless, as a container's root can, with `args` of its own (such as `--host-resolver-rules=...`). */
export function launchChromium(args: readonly string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', ...args] });
}

/**
 * Opens `path` of the dashboard served at `base`, expecting a 200, and records the page's script
 * errors and console errors (CSP violations among them) in `problems`.
 */
export async function openPage(browser: Browser, base: string, path: string, problems: string[]): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (err) => problems.push(`${path}: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`${path}: ${m.text()}`);
  });
  const res = await page.goto(new URL(path.replace(/^\//, ''), base).href);
  expect(res?.status(), path).toBe(200);
  return page;
}
