import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { argsText, arr, isObject, jsonBytes, lenientJson, num, obj, str } from '../../../electron/telemetry/json.ts';

describe('reading recorded JSON', () => {
  it('parses text or bytes and gives undefined for anything that is not JSON', () => {
    expect(lenientJson('{"a":1}')).toEqual({ a: 1 });
    expect(lenientJson(Buffer.from('[1]'))).toEqual([1]);
    expect(lenientJson('{"a":')).toBeUndefined();
    expect(lenientJson(42)).toBeUndefined();
  });

  it('gives the type asked for or nothing, whatever the value', () => {
    expect([isObject({}), isObject([]), isObject(null)]).toEqual([true, false, false]);
    expect([obj([1]), arr({}), str(1), num(Number.NaN), num('1')]).toEqual([{}, [], undefined, undefined, undefined]);
    expect([argsText('{"x":1}'), argsText({ x: 1 }), argsText(undefined)]).toEqual(['{"x":1}', '{"x":1}', '{}']);
    expect([jsonBytes(undefined), jsonBytes('é')]).toEqual([0, 4]);
    fc.assert(
      fc.property(fc.anything(), (v) => {
        expect(typeof obj(v)).toBe('object');
        expect(Array.isArray(arr(v))).toBe(true);
      }),
    );
  });
});
