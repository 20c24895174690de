import { describe, expect, it } from 'vitest';
import { firstView } from '../../../renderer/session/views.ts';

// The view a session's tab opens on: what a person came to see of it.

describe('firstView', () => {
  it('opens an ended agent session on its Conversation, an ended one that called no model on its Network, a running one on its terminal', () => {
    expect(firstView({ status: 'stopped', onDisk: true, modelCalls: 12 })).toBe('conversation');
    expect(firstView({ status: 'crashed', onDisk: true, modelCalls: 1 })).toBe('conversation');
    expect(firstView({ status: 'stopped', onDisk: true, modelCalls: 0 })).toBe('network');
    expect(firstView({ status: 'running', onDisk: true, modelCalls: 40 })).toBe('terminal');
  });

  it('opens on the terminal when nothing recorded can be browsed: no session.db, or the session not known yet', () => {
    expect(firstView({ status: 'vacuumed', onDisk: false, modelCalls: 9 })).toBe('terminal');
    expect(firstView(null)).toBe('terminal');
  });
});
