/**
 * The building blocks of every check of caller input (options, job fields, definitions): zod
 * schemas for bounded numbers and strings, the byte length of a string, and the ValidationError
 * a failed check becomes, naming the field.
 */
import { z } from 'zod';
import { ValidationError } from '../errors.js';

/** Whether `s` is at most `max` bytes in UTF-8 (a string of at most max / 3 characters is, uncounted). */
export function withinBytes(s: string, max: number): boolean {
  return s.length * 3 <= max || Buffer.byteLength(s) <= max;
}

/** A whole number from `min` to `max` (NaN, Infinity, fractions and other types refused), in `unit`. */
export function whole(min: number, max: number, unit = ''): z.ZodNumber {
  const message = `must be a whole number${unit ? ` of ${unit}` : ''} from ${min} to ${max}`;
  return z.number({ error: message }).int(message).min(min, message).max(max, message);
}

/** A string of at most `max` bytes in UTF-8, empty allowed. */
export function bytes(max: number): z.ZodString {
  return z.string({ error: 'must be a string' }).refine((s) => withinBytes(s, max), { message: `must be at most ${max} bytes` });
}

/** A string of 1 to `max` bytes in UTF-8. */
export function text(max: number): z.ZodString {
  return z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .refine((s) => withinBytes(s, max), { message: `must be at most ${max} bytes` });
}

/** Edit distance of two short strings (insertions, deletions, substitutions), case ignored. */
function distance(a: string, b: string): number {
  a = a.toLowerCase();
  b = b.toLowerCase();
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

/**
 * The error for a field `key` that is not one of `known`: it suggests the known field `key` most
 * likely misspells, or else lists them. `where` prefixes the field name (e.g. `specs[3]`).
 */
export function unknownFieldError(where: string, key: string, known: Iterable<string>): ValidationError {
  const fields = [...known];
  const limit = Math.max(1, Math.floor(key.length * 0.4)); // edits a misspelling may have
  let guess: string | undefined;
  let best = limit + 1;
  for (const f of fields) {
    const d = distance(key, f);
    if (d < best) [guess, best] = [f, d];
  }
  const hint = guess ? `did you mean "${guess}"?` : `known fields are ${fields.join(', ')}`;
  return new ValidationError(where ? `${where}.${key}` : key, `is not a known field; ${hint}`);
}

/** Checks that `obj` has only the keys of `shape` (zod's strict error names no field). */
export function knownKeys(obj: object, shape: Record<string, unknown>, where = ''): void {
  for (const k of Object.keys(obj)) if (!(k in shape)) throw unknownFieldError(where, k, Object.keys(shape));
}

/** The ValidationError naming the first problem of a zod result, with `base` before its path. */
export function zodError(base: string, error: z.ZodError): ValidationError {
  const issue = error.issues[0];
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  const field = `${base}${path}`.replace(/^\./, '');
  return new ValidationError(field || base, issue.message);
}

/**
 * Checks one value against `schema`; resolves what the schema gives (the value read once).
 * @throws {ValidationError} naming `field` (and the path below it).
 */
export function checkValue<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodError(field, parsed.error);
  return parsed.data;
}
