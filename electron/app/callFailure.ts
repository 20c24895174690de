import { MethodError } from '../owner/controlSocket.ts';
import { IdentityError } from '../contract/ids.ts';
import type { CallError } from '../contract/appContract.ts';
import { EventReadError } from '../sessions/eventDetail.ts';
import { SessionNotOnDiskError } from '../sessions/sessionStores.ts';
import { RevertRefused } from '../sessions/sessionRevert.ts';
import { ChangeTargetError } from '../sessions/workspaceChanges.ts';
import { NameTakenError } from '../store/registry.ts';
import { AmbiguousSessionError, UnknownSessionError } from '../store/resolver.ts';
import { ProjectFolderError } from '../vm/projectFolder.ts';
import { MissingAgentKeyError } from '../vm/agentCredentials.ts';
import { SessionStartRefused } from '../vm/sessionStartRefused.ts';

// What a call reports when it fails: a code the window branches on and a message it shows. Errors
// the core means (bad params, an unknown name) carry their own code; anything else is `failed`
// with its message, so a bug is reported to the window instead of crashing the host.

export class CallFailure extends Error {
  override name = 'CallFailure';
  /** The error as the contract carries it; transports send this and nothing else of the Error. */
  readonly callError: CallError;

  constructor(
    readonly code: string,
    message: string,
    readonly candidates?: CallError['candidates'],
  ) {
    super(message);
    this.callError = candidates ? { code, message, candidates } : { code, message };
  }

  toCallError(): CallError {
    return this.callError;
  }
}

/** Close matches come from the resolver as "name (id)" or a bare id. */
function candidateOf(match: string): { id: string; name: string | null } {
  const named = /^(.*) \(([0-9a-f-]{36})\)$/.exec(match);
  return named ? { id: named[2]!, name: named[1]! } : { id: match, name: null };
}

/** Any thrown value as the CallError the window receives. */
export function asCallError(err: unknown): CallError {
  if (err instanceof CallFailure) return err.toCallError();
  if (err instanceof MethodError) return { code: err.code, message: err.message };
  if (err instanceof UnknownSessionError)
    return { code: 'unknown_name', message: err.message, candidates: err.closeMatches.map(candidateOf) };
  if (err instanceof AmbiguousSessionError)
    return { code: 'ambiguous_name', message: err.message, candidates: err.candidates.map((c) => ({ id: c.id, name: c.name })) };
  if (err instanceof EventReadError) return { code: err.code, message: err.message };
  if (err instanceof SessionNotOnDiskError) return { code: 'not_on_disk', message: err.message };
  if (err instanceof ChangeTargetError) return { code: 'unknown_change', message: err.message };
  if (err instanceof RevertRefused) return { code: 'session_running', message: err.message };
  if (err instanceof NameTakenError) return { code: 'name_taken', message: err.message };
  if (err instanceof ProjectFolderError) return { code: err.code, message: err.message };
  if (err instanceof SessionStartRefused) return { code: err.code, message: err.message };
  if (err instanceof IdentityError) return { code: 'bad_params', message: err.message };
  if (err instanceof MissingAgentKeyError) return { code: 'missing_key', message: err.message };
  return { code: 'failed', message: err instanceof Error ? err.message : String(err) };
}
