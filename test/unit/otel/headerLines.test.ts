import { expect, it } from 'vitest';
import { parseHeaderLines } from '../../../electron/otel/headerLines.ts';

// Headers typed into Settings → Export: key=value a line, keys lower-cased, values taken as typed
// (no URL-decoding) and never repeated in an error.

it('reads key=value lines, skipping blank ones, lower-casing keys and keeping values as typed', () => {
  expect(parseHeaderLines('')).toEqual({});
  expect(parseHeaderLines('Authorization = Bearer a%20b==\r\n\n  x-Team=one=two  \n')).toEqual({
    authorization: 'Bearer a%20b==',
    'x-team': 'one=two',
  });
  expect(parseHeaderLines('a=1\nA=2')).toEqual({ a: '2' });
});

it('says which line is wrong without repeating its value', () => {
  expect(() => parseHeaderLines('a=1\nBearer sk-secret')).toThrow(/^header line 2 is not key=value$/);
  expect(() => parseHeaderLines('=sk-secret')).toThrow('header line 1: "" is not a header name');
  expect(() => parseHeaderLines('api key=sk-secret')).toThrow('header line 1: "api key" is not a header name');
  expect(() => parseHeaderLines('api-key=')).toThrow('header line 1: api-key has no value');
  for (const value of ['sk-\u0000secret', 'sk-\u2028secret', 'sk-秘密'])
    expect(() => parseHeaderLines(`api-key=${value}`)).toThrow(
      'header line 1: the value of api-key holds a character a header cannot carry',
    );
});
