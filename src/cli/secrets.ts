/**
 * The secrets one run of the CLI was given (the password of its Redis URL, what a `--redis-file`
 * or `--token-file` holds, the dashboard's token), and the one function every message the CLI
 * prints passes through, {@link maskSecrets}, which shows each of them as `***`.
 */

import { MASK, maskText, SECRET_PARAM } from '../redis/connection.js';

export { MASK };

/** Secrets shorter than this are masked where they sit in a URL only (a one-letter one would mask every such letter). */
const MIN_LOOSE_LENGTH = 3;

const known = new Set<string>();

/** Remembers `value` (as given, and URL-decoded) as a secret that no message may show. */
export function keepSecret(value: string | undefined): void {
  if (!value) return;
  known.add(value);
  try {
    known.add(decodeURIComponent(value));
  } catch {
    // (not URL-encoded text: the value as given is kept)
  }
}

/**
 * Remembers the secrets of a Redis URL: its password, and the value of each secret-named query
 * parameter. (What a `--redis-file` holds is kept whole besides, see readSecretFile: a file holding
 * a password alone is masked too.)
 */
export function keepUrlSecrets(value: string): void {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    keepSecret(/^[^:]+:\/\/[^@/]*:([^@/]*)@/.exec(value)?.[1]);
    for (const m of value.matchAll(/[?&]([^=&#]+)=([^&#]*)/g)) if (SECRET_PARAM.test(m[1])) keepSecret(m[2]);
    return;
  }
  keepSecret(u.password);
  for (const [name, v] of u.searchParams) if (SECRET_PARAM.test(name)) keepSecret(v);
}

/**
 * `text` with every secret masked: the password of any URL in it (`scheme://user:***@`), the
 * value of each secret-named query parameter, and every secret remembered by {@link keepSecret}.
 */
export function maskSecrets(text: string): string {
  let out = maskText(text);
  // (the longest first, so that a secret holding another is masked whole)
  for (const secret of [...known].sort((a, b) => b.length - a.length)) {
    if (secret.length >= MIN_LOOSE_LENGTH) out = out.split(secret).join(MASK);
  }
  return out;
}

/** Prints `message` on stderr as one `rota: ` line, its secrets masked. */
export function printMessage(message: string): void {
  process.stderr.write(`rota: ${maskSecrets(message)}\n`);
}
