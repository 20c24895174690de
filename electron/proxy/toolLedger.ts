import type { CarriedResult } from '../telemetry/toolLinks.ts';

// What a session's recorder remembers of its tool calls, so that a tool result sent back later is
// filed under the call it answers, in that call's trace, and recorded once: on the exchange that
// first carried it back, not again each time the client re-sends it as history. Memory is bounded:
// the oldest entries go first, which costs only conversations older than thousands of calls.

const REMEMBERED = 10_000;

export interface RecordedCall {
  /** tool_calls.call_id: the provider's id, or one this session made up for a call that had none. */
  readonly callId: string;
  readonly trace: string;
}

class Bounded<K, V> extends Map<K, V> {
  override set(key: K, value: V): this {
    super.set(key, value);
    if (this.size > REMEMBERED) this.delete(this.keys().next().value as K);
    return this;
  }
}

export class ToolLedger {
  private readonly byProviderId = new Bounded<string, RecordedCall>();
  /**
   * The calls model responses made, by the fingerprint of the conversation that asked for them;
   * several when conversations alike to the letter ran side by side (sub-agents given one prompt).
   */
  private readonly byTurn = new Bounded<string, (readonly RecordedCall[])[]>();
  private readonly carried = new Bounded<string, true>();
  private readonly answered = new Bounded<string, true>();

  /** The calls one model response made, in order; `providerIds` holds the provider's own ids ('' where it gave none). */
  remember(prefix: string, calls: readonly { readonly providerId: string; readonly recorded: RecordedCall }[]): void {
    if (calls.length === 0) return;
    this.byTurn.set(prefix, [...(this.byTurn.get(prefix) ?? []), calls.map((c) => c.recorded)]);
    for (const call of calls) if (call.providerId !== '') this.byProviderId.set(call.providerId, call.recorded);
  }

  /** The recorded call a result answers, or null when this session never saw it made. */
  callOf(result: CarriedResult): RecordedCall | null {
    const byId = result.providerId === null ? undefined : this.byProviderId.get(result.providerId);
    if (byId) return byId;
    const answers = result.answers;
    if (!answers) return null;
    const made = (this.byTurn.get(answers.prefix) ?? [])
      .map((calls) => calls[answers.index])
      .filter((c): c is RecordedCall => c !== undefined);
    const byTurn = made.find((c) => !this.answered.has(c.callId)) ?? made[0];
    if (byTurn) return byTurn;
    return answers.providerId === null ? null : (this.byProviderId.get(answers.providerId) ?? null);
  }

  /**
   * True the first time a result is carried back; false for the same result re-sent as history
   * (the same place in the same conversation), or for another answer to a call already answered.
   */
  firstCarried(result: CarriedResult, call: RecordedCall | null): boolean {
    if (this.carried.has(result.key)) return false;
    this.carried.set(result.key, true);
    if (call === null) return true;
    if (this.answered.has(call.callId)) return false;
    this.answered.set(call.callId, true);
    return true;
  }
}
