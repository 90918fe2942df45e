/**
 * One MessagePack array of strings, written by hand: a script call can then carry many values as
 * one argument (ioredis encodes every argument on its own, a large share of a busy client's CPU),
 * and the script reads them with one `cmsgpack.unpack`. Every value goes as a MessagePack string,
 * bytes too (a Buffer, or a Buffer in parts): the MessagePack reader of Redis's Lua has no binary
 * type, and a Lua string holds any bytes.
 */
import { PayloadTooLargeError } from '../errors.js';

/** A value of the array: text, bytes, or bytes in parts (written one after the other). */
export type StringValue = string | Buffer | Buffer[];

/** Bytes of a MessagePack string header for `n` bytes: fixstr (1), str8 (2), str16 (3) or str32 (5). */
const header = (n: number) => (n < 32 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5);

/**
 * Packs `values` as one MessagePack array of strings; refuses, with a PayloadTooLargeError naming
 * `field`, a result over `limit` bytes.
 */
export function packStrings(values: StringValue[], limit: number, field: string): Buffer {
  const sizes = values.map(byteLength);
  const size = sizes.reduce((sum, n) => sum + header(n) + n, 5);
  if (size > limit) throw new PayloadTooLargeError(field, size, limit);
  const buf = Buffer.allocUnsafe(size);
  let at = buf.writeUInt8(0xdd, 0); // array 32
  at = buf.writeUInt32BE(values.length, at);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    const n = sizes[i];
    switch (header(n)) {
      case 1:
        at = buf.writeUInt8(0xa0 | n, at);
        break;
      case 2:
        at = buf.writeUInt16BE(0xd900 | n, at);
        break;
      case 3:
        at = buf.writeUInt16BE(n, buf.writeUInt8(0xda, at));
        break;
      default:
        at = buf.writeUInt32BE(n, buf.writeUInt8(0xdb, at));
    }
    if (typeof v === 'string') at = writeUtf8(buf, v, n, at);
    else if (Buffer.isBuffer(v)) at += v.copy(buf, at);
    else
      for (const part of v) {
        buf.set(part, at);
        at += part.length;
      }
  }
  return buf;
}

function byteLength(v: StringValue): number {
  if (typeof v === 'string') return utf8Length(v);
  if (Buffer.isBuffer(v)) return v.length;
  return v.reduce((sum, part) => sum + part.length, 0);
}

/** Bytes of `s` in UTF-8; a short ASCII string (ids, groups) is counted without a call into Buffer. */
function utf8Length(s: string): number {
  if (s.length > 64) return Buffer.byteLength(s);
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s);
  return s.length;
}

/** Writes `s` (`bytes` long in UTF-8) into `buf` at `at`; returns where it ends. */
function writeUtf8(buf: Buffer, s: string, bytes: number, at: number): number {
  if (bytes !== s.length || bytes > 64) return at + buf.write(s, at);
  for (let i = 0; i < bytes; i++) buf[at + i] = s.charCodeAt(i);
  return at + bytes;
}
