import { randomUUID } from 'node:crypto';
import { asSessionId, type SessionId } from '../contract/ids.ts';

// Minting needs Node's CSPRNG, so it lives in the core and not in the contract, which the renderer
// imports; checking the shape here costs nothing and spares a cast.
export function newSessionId(): SessionId {
  return asSessionId(randomUUID());
}
