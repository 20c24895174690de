import type { IncomingHttpHeaders } from 'node:http';
import type { BrokeredRequest, CredentialBroker, OutgoingHeaders } from '../credentials/credentialBroker.ts';
import type { ProxyConnections } from './connections.ts';
import { NO_CREDENTIALS, type ExchangeError, type ExchangeOutcome, type ExchangeRequest, type RecordExchange } from './exchange.ts';
import type { Decision, PolicyStore } from '../policy/policy.ts';
import { AUTH_CHALLENGE, AUTH_REFUSAL, unrecordableBody, type Refused } from './refusals.ts';
import { absoluteTarget, isRefusal, splitTarget, tunnelledTarget, type Destination, type TunnelEnd } from './requestTarget.ts';

// Whether a request may leave, decided before anything is sent upstream: the connection's
// credentials, whether the session can still record, where the request goes and the policy on
// that, then the credential broker's word on the keys it carries. Every kind of request (plain,
// HTTP/2, upgrade) and every tunnel passes the same gates.

/** What letting a request in and recording it needs, whichever path it takes. */
export interface ProxyPath {
  readonly connections: ProxyConnections;
  readonly policy: Pick<PolicyStore, 'decide'>;
  readonly credentials?: CredentialBroker;
  /** Why the session cannot be recorded any more, or null. */
  readonly refusal?: () => string | null;
  /** A promise of room while the recording is too far behind, else null (mitmProxy.ts's ProxyOptions). */
  readonly backlog?: () => Promise<void> | null;
  readonly bodyCap: number;
  readonly record: RecordExchange;
}

/**
 * Runs `serve` at once, or once the recording has room again: a request waits, unread (the client's
 * socket holds its bytes), rather than go unrecorded.
 */
export function whenRecordable(proxy: Pick<ProxyPath, 'backlog'>, serve: () => void): void {
  const room = proxy.backlog?.() ?? null;
  if (room) void room.then(() => whenRecordable(proxy, serve));
  else serve();
}

/** Why a request or tunnel is turned away before its destination is read: no credentials (407), or a session that cannot be recorded (507); null to go on. */
export function entryRefusal(proxy: ProxyPath, connection: object, headers: IncomingHttpHeaders): Refused | null {
  if (!proxy.connections.authorised(connection, headers)) return { status: 407, body: AUTH_REFUSAL, headers: AUTH_CHALLENGE };
  const unrecordable = proxy.refusal?.();
  return unrecordable ? { status: 507, body: unrecordableBody(unrecordable) } : null;
}

export type Admission =
  | { readonly admitted: true; readonly request: ExchangeRequest; readonly dest: Destination; readonly decision: Decision }
  | {
      readonly admitted: false;
      readonly request: ExchangeRequest;
      readonly status: number;
      readonly body: string;
      readonly outcome: ExchangeOutcome;
    };

/** The request line as both protocols' servers give it. */
export interface RequestLine {
  readonly method?: string;
  readonly url?: string;
}

/**
 * Where a request goes and whether it may: its destination (the tunnel's, or its absolute URL's,
 * which its Host, and HTTP/2's :authority, must repeat), then the policy on that destination. A
 * refusal is answered and recorded by the caller.
 */
export function admit(
  policy: Pick<PolicyStore, 'decide'>,
  tunnel: TunnelEnd | undefined,
  req: RequestLine,
  kind: ExchangeRequest['kind'],
  headers: IncomingHttpHeaders,
  authority?: string,
): Admission {
  const startedAt = new Date();
  const method = req.method ?? 'GET';
  const target = tunnel ? tunnelledTarget(tunnel, req.url ?? '', headers.host, authority) : absoluteTarget(req.url ?? '', headers.host);
  if (isRefusal(target)) {
    // The target as far as it was understood, for the record of what was refused.
    const { path, query } = splitTarget(target.path);
    const request: ExchangeRequest = {
      startedAt,
      host: target.host ?? '(unparsed)',
      port: target.port,
      scheme: target.scheme,
      kind,
      method,
      path,
      query,
      requestHeaders: headers,
    };
    const error: ExchangeError = { kind: target.status === 421 ? 'misdirected_request' : 'bad_request', message: target.message };
    return {
      admitted: false,
      request,
      status: target.status,
      body: `capsem: ${target.message}\n`,
      outcome: { decision: 'denied', status: target.status, matchedRule: 'proxy.bad-request', error },
    };
  }
  const { path, query } = splitTarget(target.path);
  const request: ExchangeRequest = {
    startedAt,
    host: target.host,
    port: target.port,
    scheme: target.scheme,
    kind,
    method,
    path,
    query,
    requestHeaders: headers,
  };
  const decision = policy.decide(target.host, target.port, method);
  if (decision.action === 'deny') {
    const error = { kind: 'destination_denied', message: `blocked by ${decision.rule}` };
    return {
      admitted: false,
      request,
      status: 403,
      body: `capsem: ${target.host}:${target.port} is blocked by policy rule ${decision.rule}\n`,
      outcome: { decision: 'denied', status: 403, matchedRule: decision.rule, error },
    };
  }
  return { admitted: true, request, dest: target, decision };
}

/** The request as it goes upstream: with no broker, as it came. */
export function brokerRequest(credentials: CredentialBroker | undefined, dest: Destination, headers: OutgoingHeaders): BrokeredRequest {
  return credentials?.request(dest, headers, dest.path) ?? { headers, path: dest.path, uses: NO_CREDENTIALS, refusal: null };
}
