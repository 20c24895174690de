import { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import { STAND_IN_ELSEWHERE_RULE, UNCHECKED_BODY_RULE } from '../credentials/credentialBroker.ts';
import type { EgressRefused } from './egress.ts';
import type { ExchangeOutcome } from './exchange.ts';

// How the proxy answers what it will not forward, and how such an answer is recorded. A refusal is
// a readable plain-text body naming why, never a dropped connection.

/** A response from node:http's server, or node:http2's in its compatibility API. */
export type ClientResponse = ServerResponse | Http2ServerResponse;

/** A refusal before anything was forwarded: its status, its body, and any headers it needs. */
export interface Refused {
  readonly status: number;
  readonly body: string;
  readonly headers?: Record<string, string>;
}

export const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  403: 'Forbidden',
  407: 'Proxy Authentication Required',
  421: 'Misdirected Request',
  502: 'Bad Gateway',
  507: 'Insufficient Storage',
};
/** HTTP/1.1 closes the connection after a refusal; HTTP/2 has no Connection header and ends the one stream. */
const CLOSES = { connection: 'close' };
export const AUTH_CHALLENGE = { 'proxy-authenticate': 'Basic realm="capsem"' };
export const AUTH_REFUSAL =
  "capsem: this proxy serves its session's own processes only (they get its address with credentials in HTTPS_PROXY)\n";

/** What a request is refused with while the session cannot be recorded. */
export function unrecordableBody(reason: string): string {
  return `capsem: this session cannot be recorded: ${reason}; request refused\n`;
}

/** An answer written straight onto a socket that Node's server has let go of (CONNECT, upgrades). */
export function rawAnswer(socket: Duplex, status: number, reason: string, body: string, headers: Record<string, string> = {}): void {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`,
  );
}

/** A refusal through either protocol's server; once the head is out, the response is cut instead. */
export function refuse(res: ClientResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...(res instanceof ServerResponse ? CLOSES : {}),
    ...headers,
  });
  res.end(body);
}

/** The record of a request that carried a stand-in toward a host that is not its provider's. */
export function credentialRefusal(message: string): ExchangeOutcome {
  return { decision: 'denied', status: 403, matchedRule: STAND_IN_ELSEWHERE_RULE, error: { kind: 'credential_refused', message } };
}

/** The record of a request whose body, on its way where stand-ins do not belong, could not be checked for them. */
export function uncheckedBodyRefusal(reason: string): ExchangeOutcome {
  const message = `${reason}, so capsem cannot make sure it carries no stand-in for a provider key; refused and recorded (rule ${UNCHECKED_BODY_RULE}). To let such bodies go unchecked, set "credentials": {"standInElsewhere": "allow"} in the policy file`;
  return { decision: 'denied', status: 403, matchedRule: UNCHECKED_BODY_RULE, error: { kind: 'credential_refused', message } };
}

/** The record of a destination the egress function refused: denied, under the rule that refused it. */
export function refusedOutcome(err: EgressRefused): ExchangeOutcome {
  return { decision: 'denied', status: 403, matchedRule: err.rule, error: { kind: err.kind, message: err.message } };
}
