import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPrivateAddress } from '../../../electron/policy/addresses.ts';
import { StandInAddresses } from '../../../electron/proxy/standInAddresses.ts';

describe('StandInAddresses', () => {
  it('gives each name one stand-in of each family, and finds the name back from either in any spelling', () => {
    const names = new StandInAddresses();
    const a = names.standInsFor('api.example.com');
    const b = names.standInsFor('b.example.com');
    expect(a).toEqual({ v4: '198.18.0.1', v6: 'fd00:c5e3::c612:1' });
    expect(names.standInsFor('api.example.com')).toEqual(a);
    expect(b.v4).toBe('198.18.0.2');
    for (const spelling of [a.v4, a.v6, '[fd00:c5e3::c612:1]', 'fd00:c5e3:0:0:0:0:c612:0001', '::ffff:198.18.0.1', '3323068417']) {
      expect(names.nameAt(spelling), spelling).toBe('api.example.com');
    }
    expect(names.nameAt(b.v6)).toBe('b.example.com');
  });

  it('finds no name for an address it did not give, and every stand-in is private space', () => {
    const names = new StandInAddresses();
    const given = names.standInsFor('x.example');
    for (const other of ['198.18.0.2', '198.18.0.0', '127.0.0.1', 'fd00:c5e4::c612:1', 'fd00:c5e3:1::c612:1', 'not an address', '']) {
      expect(names.nameAt(other), other).toBeUndefined();
    }
    expect(isPrivateAddress(given.v4) && isPrivateAddress(given.v6)).toBe(true);
  });

  it('past its capacity gives the least recently looked-up stand-in to the new name, and forgets the old', () => {
    const names = new StandInAddresses(2);
    const first = names.standInsFor('one.example').v4;
    names.standInsFor('two.example');
    names.standInsFor('one.example');
    const third = names.standInsFor('three.example').v4;
    expect(names.nameAt(third)).toBe('three.example');
    expect(names.nameAt(first)).toBe('one.example');
    expect(names.standInsFor('two.example').v4).not.toBe(third);
  });

  it('keeps names and stand-ins one to one whatever the order of lookups (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 300 }), (picks) => {
        const names = new StandInAddresses(16);
        for (const pick of picks) {
          const name = `n${pick}.example`;
          const { v4, v6 } = names.standInsFor(name);
          expect(names.nameAt(v4)).toBe(name);
          expect(names.nameAt(v6)).toBe(name);
        }
      }),
    );
  });
});
