import { describe, expect, it } from 'vitest';
import { parseLaunchArgs, parseSessionLink, SecondInstanceDataSchema } from '../../../electron/shell/launchArgs.ts';

const exe = '/opt/Capsem/capsem-desktop';
const open = (query: string) => ({ kind: 'open', request: { query } });

describe('parseLaunchArgs', () => {
  it('finds nothing in a plain launch, packaged or from a checkout', () => {
    expect(parseLaunchArgs([exe])).toEqual({ kind: 'none' });
    expect(parseLaunchArgs(['/x/electron', 'dist/shell/main.cjs'])).toEqual({ kind: 'none' });
    expect(parseLaunchArgs(['/x/electron', '.', '--no-sandbox'])).toEqual({ kind: 'none' });
  });

  it('takes `open <name-or-id>`', () => {
    expect(parseLaunchArgs([exe, 'open', 'co-work1'])).toEqual(open('co-work1'));
    expect(parseLaunchArgs(['/x/electron', 'dist/shell/main.cjs', 'open', '3f2a9c1e-0000-4000-8000-00000000abcd'])).toEqual(
      open('3f2a9c1e-0000-4000-8000-00000000abcd'),
    );
  });

  it('skips the switches Chromium adds, wherever they land', () => {
    expect(parseLaunchArgs([exe, '--original-process-start-time=13377', 'open', '--enable-features=X', 'co-work1'])).toEqual(
      open('co-work1'),
    );
  });

  it('never takes argv[0] as a request, even if the executable is called open', () => {
    expect(parseLaunchArgs(['open', 'co-work1'])).toEqual({ kind: 'none' });
    expect(parseLaunchArgs(['open'])).toEqual({ kind: 'none' });
  });

  it('takes a capsem://session/ link', () => {
    expect(parseLaunchArgs([exe, 'capsem://session/co-work1'])).toEqual(open('co-work1'));
    expect(parseLaunchArgs([exe, 'CAPSEM://session/co-work1'])).toEqual(open('co-work1'));
    expect(parseLaunchArgs([exe, 'capsem://session/my%20session'])).toEqual(open('my session'));
  });

  it('says what is wrong with a bad request', () => {
    expect(parseLaunchArgs([exe, 'open'])).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/needs a session/) });
    expect(parseLaunchArgs([exe, 'open', '   '])).toMatchObject({ kind: 'invalid' });
    expect(parseLaunchArgs([exe, 'open', 'x'.repeat(201)])).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/200/) });
    expect(parseLaunchArgs([exe, 'open', 'evil\u001b[31m'])).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(/control/) });
    expect(parseLaunchArgs([exe, 'open', '../etc'])).toMatchObject({ kind: 'invalid' });
  });
});

describe('parseSessionLink', () => {
  it.each([
    ['capsem://app/index.html', /capsem:\/\/session/],
    ['capsem:session/co-work1', /capsem:\/\/session/],
    ['capsem://session/', /exactly one/],
    ['capsem://session/a/b', /exactly one/],
    ['capsem://session/a%2Fb', /slash/],
    ['capsem://session/a%00b', /control/],
    ['capsem://session/%E0%A4%A', /percent/],
    ['capsem://user:pw@session/x', /credentials/],
    ['capsem://session:99/x', /credentials or port/],
    ['capsem://session/x?run=rm', /query/],
    ['capsem://session/x#frag', /query or fragment/],
    ['https://session/x', /not a capsem/],
    ['not a url', /not a URL/],
  ])('refuses %s', (link, reason) => {
    expect(parseSessionLink(link)).toMatchObject({ kind: 'invalid', reason: expect.stringMatching(reason) });
  });
});

describe('SecondInstanceDataSchema', () => {
  it('accepts the argv the second instance sends and nothing else', () => {
    expect(SecondInstanceDataSchema.safeParse({ argv: [exe, 'open', 'x'] }).success).toBe(true);
    expect(SecondInstanceDataSchema.safeParse({ argv: [exe], extra: 1 }).success).toBe(false);
    expect(SecondInstanceDataSchema.safeParse({ argv: [1] }).success).toBe(false);
    expect(SecondInstanceDataSchema.safeParse(null).success).toBe(false);
  });
});
