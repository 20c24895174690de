import { canonicalHost } from '../policy/addresses.ts';

// The addresses a session's guest is given for the names it looks up. The guest never learns
// where a name really resolves: a CAPSEM_RESOLVE target on the host's loopback would be the
// guest's own loopback to it, and the name itself is what policy judges and the record shows.
// So each name gets a stand-in, one per name for the session, and a connection the guest makes
// to a stand-in comes back here to find its name. IPv4 stand-ins are in 198.18.0.0/15
// (benchmarking space, never a real destination); IPv6 ones in a unique-local /96 with the same
// 32-bit index. Both are private space, so a stand-in no name holds is refused like any other
// private address.

const V4_BASE = 198 * 2 ** 24 + 18 * 2 ** 16;
const V4_SIZE = 1 << 17;
export const STAND_IN_V6_PREFIX = 'fd00:c5e3::';
/** Names kept per session; past it the least recently looked up gives its stand-in to the next. */
const DEFAULT_CAPACITY = 65_536;

export interface StandIns {
  readonly v4: string;
  readonly v6: string;
}

function v4Of(index: number): string {
  const n = V4_BASE + index;
  return `${n >>> 24}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
}

function v6Of(index: number): string {
  const n = V4_BASE + index;
  return canonicalHost(`${STAND_IN_V6_PREFIX}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`)!.host;
}

/** The eight groups of an IPv6 address in canonical (compressed, all-hex) form. */
function ipv6Groups(address: string): number[] {
  const [head, tail] = address.split('::') as [string, string | undefined];
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

export class StandInAddresses {
  /** Name to index, in order of last use: the first is the one to give up. */
  private readonly byName = new Map<string, number>();
  private readonly byIndex = new Map<number, string>();
  private next = 1;

  constructor(private readonly capacity = Math.min(DEFAULT_CAPACITY, V4_SIZE - 2)) {}

  /** The stand-ins of `name` (canonical), given now if it has none yet. */
  standInsFor(name: string): StandIns {
    let index = this.byName.get(name);
    if (index === undefined) {
      if (this.byName.size >= this.capacity) {
        const [oldest, freed] = this.byName.entries().next().value as [string, number];
        this.byName.delete(oldest);
        index = freed;
      } else index = this.next++;
      this.byIndex.set(index, name);
    } else this.byName.delete(name);
    this.byName.set(name, index);
    return { v4: v4Of(index), v6: v6Of(index) };
  }

  /** The name a stand-in address was given for, in any spelling of the address; undefined when none. */
  nameAt(address: string): string | undefined {
    const canonical = canonicalHost(address);
    if (canonical?.kind !== 'address') return undefined;
    let n: number;
    if (canonical.family === 4) {
      n = canonical.host.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
    } else {
      const groups = ipv6Groups(canonical.host);
      if (groups[0] !== 0xfd00 || groups[1] !== 0xc5e3 || groups.slice(2, 6).some((g) => g !== 0)) return undefined;
      n = groups[6]! * 65536 + groups[7]!;
    }
    const index = n - V4_BASE;
    if (index < 1 || index >= V4_SIZE) return undefined;
    const name = this.byIndex.get(index);
    return name !== undefined && this.byName.get(name) === index ? name : undefined;
  }
}
