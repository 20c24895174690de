// What the agent-story step remembers across a session's model calls, so it marks each fact once:
// the tool results each agent has sent back, the task notifications and agent messages each agent
// has been sent, and which tool calls were Agent calls. An agent re-sends its whole conversation with
// every request; only what is new to it is marked. Memory is bounded as the tool ledger's is: the
// oldest entries go first, which costs only conversations older than tens of thousands of facts.

const REMEMBERED = 50_000;

class BoundedSet {
  private readonly seen = new Set<string>();

  /** True the first time `key` is offered. */
  add(key: string): boolean {
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    if (this.seen.size > REMEMBERED) this.seen.delete(this.seen.values().next().value as string);
    return true;
  }

  has(key: string): boolean {
    return this.seen.has(key);
  }
}

export class StoryMemory {
  private readonly carried = new BoundedSet();
  private readonly markers = new BoundedSet();
  private readonly spawnCalls = new BoundedSet();

  /** True the first time `agent` sends back the result of `callId`. */
  firstCarry(agent: string, callId: string): boolean {
    return this.carried.add(`${agent}\u0000${callId}`);
  }

  /** True the first time `agent` is sent this message (`key` names its marker and its text). */
  firstMarker(agent: string, key: string): boolean {
    return this.markers.add(`${agent}\u0000${key}`);
  }

  rememberSpawn(callId: string): void {
    this.spawnCalls.add(callId);
  }

  isSpawn(callId: string): boolean {
    return this.spawnCalls.has(callId);
  }
}
