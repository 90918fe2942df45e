/** The action's message carried to the next page: shown once, and only when this process signed it. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { FLASH_COOKIE, Flash } from '../../src/dashboard/flash.js';
import { Access } from '../../src/dashboard/security.js';

/** A request carrying `cookie`, and a response that records the cookies set on it. */
function exchange(cookie = '', https = false): { req: IncomingMessage; res: ServerResponse; set: string[] } {
  const set: string[] = [];
  const headers = https ? { cookie, 'x-forwarded-proto': 'https' } : { cookie };
  const req = { headers, socket: {} } as unknown as IncomingMessage;
  const res = { appendHeader: (_name: string, value: string) => set.push(value) } as unknown as ServerResponse;
  return { req, res, set };
}

/** A flash under a process's own secret; `https`: behind a proxy that says the request came over TLS. */
const newFlash = (cookiePath: string, https = false) => new Flash(new Access({ cookiePath, trustProxy: https }));

/** The name=value part of a Set-Cookie header. */
const pair = (header: string) => header.split(';')[0];

describe('Flash', () => {
  it('carries a message to the next request, which clears it', () => {
    const flash = newFlash('/rota');
    const first = exchange();
    flash.set(first.req, first.res, 'Deleted 4,812 jobs; 3 were running and were left.');
    expect(first.set[0]).toMatch(/; Path=\/rota; HttpOnly; SameSite=Strict; Max-Age=60$/);
    const next = exchange(pair(first.set[0]));
    expect(flash.take(next.req, next.res)).toBe('Deleted 4,812 jobs; 3 were running and were left.');
    expect(next.set[0]).toMatch(new RegExp(`^${FLASH_COOKIE}=; .*Max-Age=0`));
  });

  it("shows no message another page set, nor another process's", () => {
    const flash = newFlash('/', true);
    const forged = exchange(`${FLASH_COOKIE}=${encodeURIComponent('AAAA.Your session expired: log in at evil.example')}`, true);
    expect(flash.take(forged.req, forged.res)).toBeUndefined();
    const other = exchange('', true);
    newFlash('/', true).set(other.req, other.res, 'hello');
    expect(other.set[0]).toContain('; Secure');
    const read = exchange(pair(other.set[0]), true);
    expect(flash.take(read.req, read.res)).toBeUndefined();
    expect(exchange().req.headers.cookie).toBe('');
  });
});
