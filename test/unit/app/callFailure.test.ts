import { describe, expect, it } from 'vitest';
import { asCallError, CallFailure } from '../../../electron/app/callFailure.ts';
import { IdentityError, type SessionId } from '../../../electron/contract/ids.ts';
import { EventReadError } from '../../../electron/sessions/eventDetail.ts';
import { NameTakenError } from '../../../electron/store/registry.ts';
import { AmbiguousSessionError, UnknownSessionError } from '../../../electron/store/resolver.ts';

describe('asCallError', () => {
  it('gives each error the core means its own code, with candidates for names', () => {
    const id = '0b7d5d4e-8c2a-4b7e-9a51-3f2d1c0b9a87';
    expect(asCallError(new CallFailure('not_available', 'later'))).toEqual({ code: 'not_available', message: 'later' });
    expect(asCallError(new UnknownSessionError('co-wrk1', [`co-work1 (${id})`]))).toMatchObject({
      code: 'unknown_name',
      candidates: [{ id, name: 'co-work1' }],
    });
    expect(asCallError(new AmbiguousSessionError('x', [{ id: id as SessionId, name: 'x', createdAt: 'then' }]))).toMatchObject({
      code: 'ambiguous_name',
      candidates: [{ id, name: 'x' }],
    });
    expect(asCallError(new NameTakenError('taken')).code).toBe('name_taken');
    expect(asCallError(new EventReadError('binary_body', 'binary'))).toEqual({ code: 'binary_body', message: 'binary' });
    expect(asCallError(new IdentityError('bad')).code).toBe('bad_params');
    expect(asCallError(new Error('boom'))).toEqual({ code: 'failed', message: 'boom' });
    expect(asCallError('text')).toEqual({ code: 'failed', message: 'text' });
  });

  it('carries the contract shape on the error for the IPC bridge', () => {
    const failure = new CallFailure('unknown_name', 'no such', [{ id: 'a', name: null }]);
    expect(failure.callError).toEqual({ code: 'unknown_name', message: 'no such', candidates: [{ id: 'a', name: null }] });
  });
});
