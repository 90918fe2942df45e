/**
 * Processes whose clock runs fast, through libfaketime (Debian package `faketime`): for tests of
 * a scheduler through hours of wall-clock time, DST changes included, in seconds.
 *
 * Every process of such a test runs at the same speed-up, so the clocks agree on how fast time
 * passes: libfaketime scales the time a faked process reads (realtime and monotonic clocks) and
 * the timeouts it sleeps for. Each starts at the given instant when it starts; a scheduler reads
 * the server's TIME for its clock, so the starts need not agree.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Debian's libfaketime (package faketime), for this machine's architecture. */
const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((p) => existsSync(p));

/** Why fast clocks cannot run here (libfaketime or a C compiler missing), or null when they can. */
export function fakeClockMissing(): string | null {
  if (!LIBFAKETIME) return 'libfaketime is not installed (Debian package faketime)';
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'no C compiler (cc) to build the malloc stand-in redis-server needs under libfaketime';
  }
  return null;
}

/**
 * Builds test/helpers/malloc-shim.c, once per checkout and source: under a name with the source's
 * hash in node_modules/.cache (a build product kept between runs, not a temporary file), written
 * under another name first, so parallel builds are safe.
 */
function mallocShim(): string {
  const src = new URL('./malloc-shim.c', import.meta.url).pathname;
  const hash = createHash('sha256').update(readFileSync(src)).digest('hex').slice(0, 16);
  const cache = fileURLToPath(new URL('../../node_modules/.cache/', import.meta.url));
  mkdirSync(cache, { recursive: true });
  const out = join(cache, `rota-malloc-shim-${hash}.so`);
  if (!existsSync(out)) {
    const tmp = `${out}.${process.pid}`;
    execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', tmp, src, '-ldl']);
    renameSync(tmp, out);
  }
  return out;
}

/** A clock that starts at `start` and runs `speed` times as fast as real time. */
export interface FakeClock {
  start: Date;
  speed: number;
}

/** libfaketime's FAKETIME value: "@2026-04-04 13:40:00 x240" (UTC, as TZ=UTC reads it). */
function faketime(c: FakeClock): string {
  return `@${c.start.toISOString().slice(0, 19).replace('T', ' ')} x${c.speed}`;
}

/** Environment for a redis-server on a fast clock: libfaketime, with the malloc stand-in before it. */
export function fakeClockRedisEnv(c: FakeClock): NodeJS.ProcessEnv {
  return { LD_PRELOAD: `${mallocShim()} ${LIBFAKETIME}`, FAKETIME: faketime(c), TZ: 'UTC' };
}

/** Environment for a Node process on a fast clock (Node allocates with glibc and needs no stand-in). */
export function fakeClockNodeEnv(c: FakeClock): NodeJS.ProcessEnv {
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: faketime(c), TZ: 'UTC' };
}

/**
 * A clock a test steps while the server runs, as NTP or an operator steps a wall clock: the
 * realtime clock moves by the offset the test sets, the monotonic clock does not. libfaketime
 * reads the offset from a file on every call (FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE).
 */
export class SteppedClock {
  private readonly dir = mkdtempSync(join(tmpdir(), 'rota-clock-'));
  private readonly file = join(this.dir, 'faketime');
  private offsetS = 0;

  constructor() {
    this.write();
  }

  /** Environment for a redis-server on this clock (with the malloc stand-in libfaketime needs). */
  redisEnv(): NodeJS.ProcessEnv {
    return {
      LD_PRELOAD: `${mallocShim()} ${LIBFAKETIME}`,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
      TZ: 'UTC',
    };
  }

  /** Steps the clock by `seconds` (negative: back). */
  step(seconds: number): void {
    this.offsetS += seconds;
    this.write();
  }

  /** Removes the offset file (the server on it must be stopped first). */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Writes the offset under another name first, so the server never reads half a file. */
  private write(): void {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, `${this.offsetS >= 0 ? '+' : ''}${this.offsetS}\n`);
    renameSync(tmp, this.file);
  }
}
