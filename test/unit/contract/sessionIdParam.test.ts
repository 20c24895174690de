import { describe, expect, it } from 'vitest';
import { CALLS } from '../../../electron/contract/appContract.ts';
import type { SessionId } from '../../../electron/contract/ids.ts';

describe('session ids in call params', () => {
  it('hands the handler a SessionId parsed from the wire string', () => {
    const id: SessionId = CALLS['sessions.info'].params.parse({ id: '0b7c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f' }).id;
    expect(id).toBe('0b7c2f4e-1d2a-4c3b-9e8f-7a6b5c4d3e2f');
  });

  it('refuses a display name where an id belongs, saying so', () => {
    const parsed = CALLS['terminal.detach'].params.safeParse({ id: 'co-work1' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe('a session id (a UUID), not a display name');
  });
});
