import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { asDisplayName, asSessionId, IdentityError, isSessionId, type SessionId } from '../../../electron/contract/ids.ts';
import { openMainDb } from '../../../electron/store/mainDb.ts';
import { newSessionId } from '../../../electron/store/newSessionId.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { getSession, NameTakenError, registerSession, releaseName, renameSession } from '../../../electron/store/registry.ts';
import { AmbiguousSessionError, MIN_ID_PREFIX, resolveSession, UnknownSessionError } from '../../../electron/store/resolver.ts';
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

  it('a word never resolves to a session whose id merely contains it, nor to one it starts by fewer than 8 characters (property)', () => {
    const sessions = Array.from({ length: 5 }, (_, i) => registerSession(db, { name: `s${i}` }));
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{1,12}$/), (input) => {
        try {
          const id = resolveSession(home, db, input);
          const hit = sessions.find((s) => s.id === id)!;
          expect(hit.name === input || (input.length >= MIN_ID_PREFIX && hit.id.startsWith(input))).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(UnknownSessionError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('ids as the window shows them', () => {
  /** Enters a session under a chosen id, as an import may (ids are otherwise random). */
  function enter(id: string, name: string | null = null): SessionId {
    db.prepare(
      "INSERT INTO sessions (id, name, resumable, status, created_at, updated_at) VALUES (?, ?, ?, 'stopped', '2025-01-01T00:00:00Z', '2025-01-01T00:00:00Z')",
    ).run(id, name, name ? 1 : 0);
    return id as SessionId;
  }

  it('resolves an 8-character prefix, and any longer one, to the one id it starts (property)', () => {
    const sessions = Array.from({ length: 20 }, () => registerSession(db, {}));
    fc.assert(
      fc.property(fc.nat({ max: sessions.length - 1 }), fc.integer({ min: MIN_ID_PREFIX, max: 36 }), fc.boolean(), (n, length, upper) => {
        const { id } = sessions[n]!;
        const prefix = id.slice(0, length);
        const matching = sessions.filter((s) => s.id.startsWith(prefix));
        const typed = upper ? prefix.toUpperCase() : prefix;
        if (matching.length === 1) expect(resolveSession(home, db, typed)).toBe(id);
        else expect(() => resolveSession(home, db, typed)).toThrow(AmbiguousSessionError);
      }),
      { numRuns: 1000 },
    );
    // Shorter than the window's 8 characters, a prefix is no id: it says so and offers the match.
    const short = sessions[0]!.id.slice(0, 7);
    expect(() => resolveSession(home, db, short)).toThrow(/an id matches from its first 8 characters/);
  });

  it('a prefix several ids share is an error that lists each with its name, and never picks one (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.stringMatching(/^[0-9a-f]{4}$/), { minLength: 2, maxLength: 4 }), (tails) => {
        db.exec('DELETE FROM sessions');
        const ids = tails.map((t, i) => enter(`af0d40d4-${t}-4000-8000-00000000000${i}`, i === 0 ? 'first' : null));
        let thrown: unknown;
        try {
          resolveSession(home, db, 'AF0D40D4');
        } catch (err) {
          thrown = err;
        }
        expect(thrown).toBeInstanceOf(AmbiguousSessionError);
        const error = thrown as AmbiguousSessionError;
        expect(error.candidates.map((c) => c.id).sort()).toEqual([...ids].sort());
        expect(error.message).toMatch(/^"AF0D40D4" is the start of \d+ session ids; use more of the id: /);
        expect(error.message).toContain(`${ids[0]} (first, created`);
        expect(error.message).toContain(`${ids[1]} (unnamed, created`);
        for (const id of ids) expect(resolveSession(home, db, id.slice(0, 13))).toBe(id);
      }),
      { numRuns: 50 },
    );
  });

  it('a display name that looks like hex is still a name; one that is also the start of another id is refused, never guessed', () => {
    const named = enter('11111111-1111-4111-8111-111111111111', 'deadbeef');
    expect(resolveSession(home, db, 'deadbeef')).toBe(named);
    // A name and the start of its own id mean the same session: no ambiguity.
    const self = enter('cafebabe-1111-4111-8111-111111111111', 'cafebabe');
    expect(resolveSession(home, db, 'cafebabe')).toBe(self);
    const other = enter('deadbeef-2222-4222-8222-222222222222');
    expect(() => resolveSession(home, db, 'deadbeef')).toThrow(
      /^"deadbeef" is the name of a session and the start of the id of a session; use more of the id: /,
    );
    expect(resolveSession(home, db, other)).toBe(other);
    expect(resolveSession(home, db, named)).toBe(named);
    // A name is matched exactly: the start of a name is not the name.
    expect(() => resolveSession(home, db, 'deadbee')).toThrow(UnknownSessionError);
  });
});
