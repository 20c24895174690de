import { describe, expect, it } from 'vitest';
import { checkExternalLink, EXTERNAL_LINK_HOSTS } from '../../../electron/shell/externalLinks.ts';

describe('checkExternalLink', () => {
  it('opens https links to listed hosts, as the parser serialised them', () => {
    expect(checkExternalLink('https://docs.anthropic.com/en/api')).toEqual({ ok: true, url: 'https://docs.anthropic.com/en/api' });
    expect(checkExternalLink('https://GitHub.com/capsem')).toEqual({ ok: true, url: 'https://github.com/capsem' });
    expect(checkExternalLink('https://github.com./x')).toMatchObject({ ok: true });
    expect(checkExternalLink('https://github.com/a b')).toEqual({ ok: true, url: 'https://github.com/a%20b' });
  });

  it.each([
    ['javascript:alert(1)', /only https/],
    ['JavaScript://github.com/%0aalert(1)', /only https/],
    ['file:///etc/passwd', /only https/],
    ['data:text/html,<script>alert(1)</script>', /only https/],
    ['http://github.com/', /only https/],
    ['capsem://session/x', /only https/],
    ['smb://github.com/share', /only https/],
    ['vscode://file/etc/passwd', /only https/],
    ['https://user:pw@github.com/', /credentials/],
    ['https://docs.anthropic.com@evil.example/', /credentials/],
    ['https://github.com:8443/', /port/],
    ['https://evil.example/', /not on the list/],
    ['https://github.com.evil.example/', /not on the list/],
    ['https://gist.github.com/', /not on the list/],
    ['https://127.0.0.1/', /not on the list/],
    ['//github.com/x', /not a URL/],
    ['', /not a URL/],
  ])('refuses %s', (link, reason) => {
    expect(checkExternalLink(link)).toMatchObject({ ok: false, reason: expect.stringMatching(reason) });
  });

  it('refuses an overlong link', () => {
    expect(checkExternalLink(`https://github.com/${'a'.repeat(3000)}`)).toMatchObject({ ok: false });
  });

  it('refuses punycode look-alikes of listed hosts', () => {
    // "gіthub.com" with a Cyrillic і becomes xn--gthub-... after parsing.
    expect(checkExternalLink('https://gіthub.com/')).toMatchObject({ ok: false, reason: expect.stringMatching(/xn--/) });
  });

  it('lists exact, lower-case host names', () => {
    for (const host of EXTERNAL_LINK_HOSTS) expect(new URL(`https://${host}/`).hostname).toBe(host);
  });
});
