/** The action's message carried to the next page: shown once, and only when this process signed it. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { FLASH_COOKIE, Flash } from '../../src/dashboard/flash.js';

/** A request carrying `cookie`, and a response that records the cookies set on it. */
function exchange(cookie = ''): { req: IncomingMessage; res: ServerResponse; set: string[] } {
  const set: string[] = [];
  const req = { headers: { cookie }, socket: {} } as unknown as IncomingMessage;
  const res = { appendHeader: (_name: string, value: string) => set.push(value) } as unknown as ServerResponse;
  return { req, res, set };
}

/** The name=value part of a Set-Cookie header. */
const pair = (header: string) => header.split(';')[0];

describe('Flash', () => {
  it('carries a message to the next request, which clears it', () => {
    const flash = new Flash('/rota', () => false);
    const first = exchange();
    flash.set(first.req, first.res, 'Deleted 4,812 jobs; 3 were running and were left.');
    expect(first.set[0]).toMatch(/; Path=\/rota; HttpOnly; SameSite=Strict; Max-Age=60$/);
    const next = exchange(pair(first.set[0]));
    expect(flash.take(next.req, next.res)).toBe('Deleted 4,812 jobs; 3 were running and were left.');
    expect(next.set[0]).toMatch(new RegExp(`^${FLASH_COOKIE}=; .*Max-Age=0`));
  });

  it("shows no message another page set, nor another process's", () => {
    const flash = new Flash('/', () => true);
    const forged = exchange(`${FLASH_COOKIE}=${encodeURIComponent('AAAA.Your session expired: log in at evil.example')}`);
    expect(flash.take(forged.req, forged.res)).toBeUndefined();
    const other = exchange();
    new Flash('/', () => true).set(other.req, other.res, 'hello');
    expect(other.set[0]).toContain('; Secure');
    const read = exchange(pair(other.set[0]));
    expect(flash.take(read.req, read.res)).toBeUndefined();
    expect(exchange().req.headers.cookie).toBe('');
  });
});
