// Which links the window may hand to the desktop's browser. The window itself never leaves
// capsem://app/; a link the renderer follows is refused there and, only if it passes this check,
// opened with shell.openExternal. openExternal on an arbitrary URL can launch any registered
// handler (file:, smb:, custom schemes), so the check is an allowlist, decided on the parsed URL,
// never on string prefixes. Pure (no electron import) so it is unit tested under plain Node.

/**
 * Hosts the app links to: its own project page and the docs of the agents and model APIs whose
 * traffic it records. Exact host names; a subdomain is not implied.
 */
export const EXTERNAL_LINK_HOSTS: readonly string[] = [
  'github.com',
  'docs.anthropic.com',
  'docs.claude.com',
  'platform.openai.com',
  'ai.google.dev',
  'modelcontextprotocol.io',
];

export type ExternalLinkCheck = { readonly ok: true; readonly url: string } | { readonly ok: false; readonly reason: string };

export function checkExternalLink(link: string, allowedHosts: readonly string[] = EXTERNAL_LINK_HOSTS): ExternalLinkCheck {
  if (link.length > 2048) return { ok: false, reason: 'the link is longer than 2048 characters' };
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return { ok: false, reason: 'not a URL' };
  }
  if (url.protocol !== 'https:') return { ok: false, reason: `only https links open outside the app, not ${url.protocol}` };
  // user:pass@host links are a phishing shape ("https://docs.anthropic.com@evil.example/") and
  // nothing the app links to needs them.
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'the link carries credentials' };
  if (url.port !== '') return { ok: false, reason: 'the link names a port' };
  // URL lower-cases and punycodes the host, and drops a trailing dot only in the comparison below.
  const host = url.hostname.replace(/\.$/, '');
  if (!allowedHosts.includes(host)) return { ok: false, reason: `${host} is not on the list of hosts the app opens` };
  // The serialised URL, not the input: what is opened is exactly what was checked.
  return { ok: true, url: url.href };
}
