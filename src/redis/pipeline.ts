/**
 * Sends a pipeline or MULTI and checks every command's reply: ioredis resolves `exec()` with an
 * `[error, value]` pair per command, so a command Redis refused would otherwise pass unnoticed.
 */

import type { ChainableCommander } from 'ioredis';
import { UnexpectedReplyError } from '../errors.js';

/**
 * Sends `pipe` and answers its commands' replies in order (undefined for a refused command).
 * Throws the first command's error, or, given `refused`, hands each refused command's index and
 * error to it instead (for a caller that sends those again). A MULTI that did not run (an
 * aborted transaction) throws too.
 */
export async function execChecked(pipe: ChainableCommander, refused?: (index: number, err: Error) => void): Promise<unknown[]> {
  const replies = await pipe.exec();
  if (replies === null) throw new UnexpectedReplyError('the transaction was aborted: Redis ran none of its commands');
  const values: unknown[] = [];
  for (const [i, [err, value]] of replies.entries()) {
    if (err) {
      if (!refused) throw err;
      refused(i, err);
    }
    values.push(value);
  }
  return values;
}
