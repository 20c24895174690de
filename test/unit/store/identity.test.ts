import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { asDisplayName, asSessionId, IdentityError, isSessionId, type SessionId } from '../../../electron/contract/ids.ts';
import { openMainDb } from '../../../electron/store/mainDb.ts';
import { newSessionId } from '../../../electron/store/newSessionId.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { getSession, NameTakenError, registerSession, releaseName, renameSession } from '../../../electron/store/registry.ts';
import { AmbiguousSessionError, resolveSession, UnknownSessionError } from '../../../electron/store/resolver.ts';
import { tempHome } from '../../helpers/tempHome.ts';

let home: ReturnType<typeof tempHome>;
let db: ReturnType<typeof openMainDb>;
beforeEach(() => {
  home = tempHome();
  db = openMainDb(home);
});
afterEach(() => {
  db.close();
  home.remove();
});

describe('session ids and display names', () => {
  it('refuses a display name where an id is required, and says to resolve it', () => {
    expect(() => asSessionId('co-work1')).toThrow(/display name, not a session id; resolve the name first/);
    expect(() => sessionPaths(home, 'co-work1' as SessionId)).toThrow(IdentityError);
    expect(() => asSessionId('../../etc')).toThrow(IdentityError);
  });

  it('accepts names of the documented shape only', () => {
    for (const ok of ['co-work1', 'a', 'X_y-z', 'a'.repeat(64)]) expect(asDisplayName(ok)).toBe(ok);
    for (const bad of ['', '-lead', '_lead', 'has space', 'a/b', '../x', 'a'.repeat(65), 'é', newSessionId()]) {
      expect(() => asDisplayName(bad), bad).toThrow(IdentityError);
    }
  });

  it('never accepts a name that could be a path or an id (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        let accepted = false;
        try {
          asDisplayName(s);
          accepted = true;
        } catch (err) {
          expect(err).toBeInstanceOf(IdentityError);
        }
        if (accepted) {
          expect(s).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/);
          expect(isSessionId(s.toLowerCase())).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('registry and resolver', () => {
  it('two sessions, one named co-work1: every lookup lands on the right id', () => {
    const named = registerSession(db, { name: 'co-work1' });
    const other = registerSession(db, {});
    expect(resolveSession(home, db, 'co-work1')).toBe(named.id);
    expect(resolveSession(home, db, named.id)).toBe(named.id);
    expect(resolveSession(home, db, other.id)).toBe(other.id);
    expect(resolveSession(home, db, other.id.toUpperCase())).toBe(other.id);
    expect(resolveSession(home, db, ' co-work1 ')).toBe(named.id);
    expect(() => resolveSession(home, db, 'co-work2')).toThrow(UnknownSessionError);
  });

  it('lists close matches for an unknown name', () => {
    const s = registerSession(db, { name: 'co-work1' });
    registerSession(db, { name: 'unrelated' });
    const err = (() => {
      try {
        resolveSession(home, db, 'co-wrk1');
      } catch (e) {
        return e as UnknownSessionError;
      }
      throw new Error('expected an error');
    })();
    expect(err).toBeInstanceOf(UnknownSessionError);
    expect(err.closeMatches).toEqual([`co-work1 (${s.id})`]);
    expect(err.message).toContain('close matches: co-work1');
  });

  it('keeps names unique among resumable sessions', () => {
    const first = registerSession(db, { name: 'co-work1' });
    expect(() => registerSession(db, { name: 'co-work1' })).toThrow(NameTakenError);
    expect(() => registerSession(db, { name: 'co-work1' })).toThrow(new RegExp(first.id));
    const second = registerSession(db, { name: 'other' });
    expect(() => renameSession(db, second.id, 'co-work1')).toThrow(NameTakenError);
  });

  it('two sessions once named co-work1, one renamed since, resolve correctly', () => {
    const original = registerSession(db, { name: 'co-work1' });
    renameSession(db, original.id, 'co-work-old');
    const newer = registerSession(db, { name: 'co-work1' });
    expect(resolveSession(home, db, 'co-work1')).toBe(newer.id);
    expect(resolveSession(home, db, 'co-work-old')).toBe(original.id);
    expect(getSession(db, original.id)!.id).toBe(original.id);
  });

  it('an ended session that gives its name up is still found by id; the name goes to the resumable holder', () => {
    const ended = registerSession(db, { name: 'co-work1' });
    releaseName(db, ended.id);
    expect(resolveSession(home, db, 'co-work1')).toBe(ended.id);
    const live = registerSession(db, { name: 'co-work1' });
    expect(resolveSession(home, db, 'co-work1')).toBe(live.id);
    expect(resolveSession(home, db, ended.id)).toBe(ended.id);
  });

  it('a name carried only by several ended sessions is ambiguous and lists their ids', () => {
    const a = registerSession(db, { name: 'co-work1' });
    releaseName(db, a.id);
    const b = registerSession(db, { name: 'co-work1' });
    releaseName(db, b.id);
    expect(() => resolveSession(home, db, 'co-work1')).toThrow(AmbiguousSessionError);
    expect(() => resolveSession(home, db, 'co-work1')).toThrow(new RegExp(`${a.id}.*|${b.id}`));
  });

  it('a display name never resolves to a session that merely has it as an id prefix or substring (property)', () => {
    const sessions = Array.from({ length: 5 }, (_, i) => registerSession(db, { name: `s${i}` }));
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,12}$/), (input) => {
        try {
          const id = resolveSession(home, db, input);
          const hit = sessions.find((s) => s.id === id)!;
          expect(hit.name === input || hit.id === input).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(UnknownSessionError);
        }
      }),
      { numRuns: 500 },
    );
  });
});
