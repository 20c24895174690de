/** host, or host:port when the port is not the scheme's default ("h:443 shares h's row"). */
export function hostOf(domain: string, port: number | undefined, connType: string | undefined): string {
  const defaultPort = connType === 'http' ? 80 : 443;
  return port === undefined || port === defaultPort ? domain : `${domain}:${port}`;
}
