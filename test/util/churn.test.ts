import { describe, expect, it } from 'vitest';
import { Dictionary, removeFrom } from '../../src/util/churn.js';

describe('collections for entries that come and go', () => {
  it('a dictionary counts, finds and removes values by any string key, prototype names and numbers included', () => {
    const d = new Dictionary<number>();
    const keys = ['job-1', '__proto__', 'constructor', 'toString', '123', '', 'hasOwnProperty'];
    keys.forEach((k, i) => {
      d.set(k, i);
    });
    expect(d.size).toBe(keys.length);
    keys.forEach((k, i) => {
      expect(d.get(k)).toBe(i);
    });
    // setting a key again replaces its value and is not counted twice
    d.set('job-1', 10);
    expect(d.size).toBe(keys.length);
    expect(d.get('job-1')).toBe(10);
    expect(d.get('missing')).toBeUndefined();
    expect(d.delete('__proto__')).toBe(true);
    expect(d.delete('__proto__')).toBe(false);
    expect(d.delete('missing')).toBe(false);
    expect(d.get('__proto__')).toBeUndefined();
    expect(d.size).toBe(keys.length - 1);
    expect(d.values().sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6, 10]);
    // values() is a copy: deleting while walking it misses nothing
    for (const v of d.values()) if (v !== 10) expect(d.delete(keys[v])).toBe(true);
    expect(d.values()).toEqual([10]);
    expect(d.size).toBe(1);
  });

  it('removeFrom takes out the first occurrence only, and says whether it found one', () => {
    const a = { n: 1 };
    const b = { n: 2 };
    const list = [a, b, a];
    expect(removeFrom(list, a)).toBe(true);
    expect(list).toEqual([b, a]);
    expect(list[1]).toBe(a);
    expect(removeFrom(list, { n: 2 })).toBe(false);
    expect(removeFrom(list, b)).toBe(true);
    expect(removeFrom(list, a)).toBe(true);
    expect(removeFrom(list, a)).toBe(false);
    expect(list).toEqual([]);
  });
});
