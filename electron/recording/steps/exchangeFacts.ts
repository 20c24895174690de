import type { Exchange } from '../../proxy/exchange.ts';
import type { RecordedCall } from '../../proxy/toolLedger.ts';
import type { DecodedBody } from '../../telemetry/decodeBody.ts';
import { lenientJson } from '../../telemetry/json.ts';
import type { ToolCallOut } from '../../telemetry/modelResponse.ts';
import type { RequestView } from '../../telemetry/requestView.ts';
import type { CarriedResult, ConversationLinks } from '../../telemetry/toolLinks.ts';

// What every exchange step reads: the exchange as the proxy handed it over, its bodies decoded,
// and the few facts several steps derive alike (a header, the key it used, a preview), each
// derived here once so no two steps can read the same exchange differently.

/** The length of a preview column: a body's, a prompt's, a tool result's. */
export const PREVIEW = 256;

export function header(headers: Exchange['requestHeaders'] | Exchange['responseHeaders'], name: string): string | undefined {
  const value = headers?.[name];
  return Array.isArray(value) ? value.join(', ') : value === undefined ? undefined : String(value);
}

/** The key a request used, as the ledger names it: the one substituted, else the first whose stand-in it carried. */
export function credentialRefOf(ex: Exchange): string | null {
  const uses = ex.credentials ?? [];
  return (uses.find((u) => u.outcome === 'substituted') ?? uses[0])?.credentialRef ?? null;
}

export function preview(bytes: Buffer): string | null {
  if (bytes.length === 0) return null;
  const text = bytes.subarray(0, PREVIEW * 4).toString('utf8');
  return text.includes('\uFFFD') && !/^[\s{["]/.test(text) ? `<${bytes.length} bytes of binary>` : text.slice(0, PREVIEW);
}

/** A model API call as the model-calls step read it, for the steps after it: read once. */
export interface ModelCallReading {
  readonly request: RequestView;
  readonly links: ConversationLinks;
  /** The tool results the request carried, each with the call it answers where the session saw it made. */
  readonly carried: readonly { readonly result: CarriedResult; readonly call: RecordedCall | null }[];
  /** The tool calls the response asked for; none when nothing came back. */
  readonly toolCalls: readonly ToolCallOut[];
}

/** One finished exchange as the steps read it. */
export class ExchangeFacts {
  private parsedJson: { readonly value: unknown } | null = null;
  /**
   * The step that took the exchange as its own (a model API call), so the steps after it that read
   * other protocols (MCP) leave it alone; null while none has.
   */
  claimedBy: string | null = null;
  /** What the model-calls step read of the exchange, when it took it as a model call. */
  modelCall: ModelCallReading | null = null;
  private startedAtText: string | null = null;

  constructor(
    readonly ex: Exchange,
    readonly request: DecodedBody,
    readonly response: DecodedBody,
  ) {}

  /** When the exchange started, as its rows write it: formatted once for every step's rows. */
  get at(): string {
    return (this.startedAtText ??= this.ex.startedAt.toISOString());
  }

  /** The request body read as JSON, parsed once for every step that asks. */
  requestJson(): unknown {
    this.parsedJson ??= { value: lenientJson(this.request.bytes) };
    return this.parsedJson.value;
  }

  /** The request body starts as a JSON object or array does. */
  get requestLooksJson(): boolean {
    return this.request.bytes[0] === 0x7b || this.request.bytes[0] === 0x5b;
  }
}
