import { describe, expect, it } from 'vitest';
import { isSessionId } from '../../../electron/contract/ids.ts';
import { newSessionId } from '../../../electron/store/newSessionId.ts';

describe('newSessionId', () => {
  it('mints opaque, distinct UUID ids', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newSessionId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(isSessionId(id)).toBe(true);
  });
});
