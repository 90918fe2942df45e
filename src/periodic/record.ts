/** Records the scheduler hands to its Lua scripts. */

/**
 * A record of the stage script: a MessagePack array of raw strings, in the formats Redis's cmsgpack reads
 * (fixstr, str16, str32; it knows neither bin nor str8). Built from the claim, in the binary-safe form cmsgpack decodes.
 */
export function encodeRecord(values: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [Buffer.from([0xdc, values.length >> 8, values.length & 0xff])];
  for (const v of values) {
    const b = typeof v === 'string' ? Buffer.from(v) : v;
    if (b.length < 32) parts.push(Buffer.from([0xa0 | b.length]));
    else if (b.length < 0x10000) parts.push(Buffer.from([0xda, b.length >> 8, b.length & 0xff]));
    else {
      const h = Buffer.alloc(5);
      h[0] = 0xdb;
      h.writeUInt32BE(b.length, 1);
      parts.push(h);
    }
    parts.push(b);
  }
  return Buffer.concat(parts);
}
