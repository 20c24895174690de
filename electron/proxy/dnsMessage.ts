// DNS messages as the guest's resolvers send them (RFC 1035), read and answered without sockets.
// Only what an answerer of A and AAAA needs: one question, no compression inside it, answers
// that point back at it. Every byte comes from the guest, so every length is checked before it
// is read, and nothing here throws on input: a query that cannot be read is a `DnsRefusal`.

export const DNS_TYPES: Readonly<Record<number, string>> = {
  1: 'A',
  2: 'NS',
  5: 'CNAME',
  6: 'SOA',
  12: 'PTR',
  15: 'MX',
  16: 'TXT',
  28: 'AAAA',
  33: 'SRV',
  64: 'SVCB',
  65: 'HTTPS',
  255: 'ANY',
};
export const TYPE_A = 1;
export const TYPE_AAAA = 28;
const CLASS_IN = 1;
const HEADER = 12;

export type Rcode = 'NOERROR' | 'FORMERR' | 'SERVFAIL' | 'NXDOMAIN' | 'NOTIMP' | 'REFUSED';
const RCODES: Readonly<Record<Rcode, number>> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 };

export interface DnsQuery {
  readonly id: number;
  /** Recursion desired, echoed in the answer. */
  readonly recursionDesired: boolean;
  /** The name asked for, lower case, without the root's trailing dot. */
  readonly name: string;
  readonly type: number;
  readonly qclass: number;
  /** The question as it came (its case too: some resolvers check that the answer echoes it). */
  readonly question: Buffer;
}

export interface DnsRefusal {
  /** The query's id, when its header could be read: an answer is owed then. */
  readonly id: number | null;
  readonly rcode: 'FORMERR' | 'NOTIMP';
  readonly reason: string;
}

export function typeName(type: number): string {
  return DNS_TYPES[type] ?? `TYPE${type}`;
}

/** Characters a host name's label may hold here; anything else cannot name a destination. */
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$/;

export function parseDnsQuery(message: Buffer): DnsQuery | DnsRefusal {
  if (message.length < HEADER)
    return { id: null, rcode: 'FORMERR', reason: `a DNS message of ${message.length} bytes is shorter than its header` };
  const id = message.readUInt16BE(0);
  const flags = message.readUInt16BE(2);
  const refuse = (rcode: DnsRefusal['rcode'], reason: string): DnsRefusal => ({ id, rcode, reason });
  if (flags & 0x8000) return refuse('FORMERR', 'a response where a query was due');
  const opcode = (flags >> 11) & 0xf;
  if (opcode !== 0) return refuse('NOTIMP', `opcode ${opcode}: only standard queries are answered`);
  const questions = message.readUInt16BE(4);
  if (questions !== 1) return refuse('FORMERR', `${questions} questions: a query asks one`);
  const labels: string[] = [];
  let offset = HEADER;
  let length = 0;
  for (;;) {
    if (offset >= message.length) return refuse('FORMERR', 'the question ends inside its name');
    const size = message[offset]!;
    if (size === 0) break;
    if (size > 63) return refuse('FORMERR', 'a label over 63 bytes, or a compression pointer in the question');
    if (offset + 1 + size > message.length) return refuse('FORMERR', 'the question ends inside a label');
    length += size + 1;
    if (length > 254) return refuse('FORMERR', 'a name over 255 bytes');
    labels.push(message.toString('latin1', offset + 1, offset + 1 + size));
    offset += 1 + size;
  }
  offset += 1;
  if (offset + 4 > message.length) return refuse('FORMERR', 'the question ends before its type and class');
  const name = labels.join('.').toLowerCase();
  if (labels.length === 0) return refuse('FORMERR', 'a question about the root');
  if (!labels.every((label) => LABEL.test(label.toLowerCase()))) return refuse('FORMERR', `"${printable(name)}" is not a host name`);
  return {
    id,
    recursionDesired: (flags & 0x0100) !== 0,
    name,
    type: message.readUInt16BE(offset),
    qclass: message.readUInt16BE(offset + 2),
    question: message.subarray(HEADER, offset + 4),
  };
}

export function isRefusal(parsed: DnsQuery | DnsRefusal): parsed is DnsRefusal {
  return 'rcode' in parsed;
}

/** A name as text for a record, with what is not printable ASCII escaped. */
export function printable(name: string): string {
  return name.replace(/[^\x21-\x7e]/g, (c) => `\\${c.charCodeAt(0).toString(10).padStart(3, '0')}`).slice(0, 300);
}

function header(id: number, recursionDesired: boolean, rcode: Rcode, questions: number, answers: number): Buffer {
  const h = Buffer.alloc(HEADER);
  h.writeUInt16BE(id, 0);
  // QR (a response), RD echoed, RA: this answerer resolves whatever it is asked.
  h.writeUInt16BE(0x8000 | (recursionDesired ? 0x0100 : 0) | 0x0080 | RCODES[rcode], 2);
  h.writeUInt16BE(questions, 4);
  h.writeUInt16BE(answers, 6);
  return h;
}

function addressBytes(address: string, type: number): Buffer {
  if (type === TYPE_A) return Buffer.from(address.split('.').map(Number));
  const [head, tail = ''] = address.split('::') as [string, string?];
  const groups = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const front = groups(head);
  const back = address.includes('::') ? groups(tail) : [];
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const bytes = Buffer.alloc(16);
  all.forEach((g, i) => bytes.writeUInt16BE(g, i * 2));
  return bytes;
}

/**
 * The answer to `query`: `addresses` (IPv4 for A, IPv6 for AAAA, in plain notation) as records
 * of the question's name, or none. Each record names the question by a pointer to it.
 */
export function dnsAnswer(query: DnsQuery, rcode: Rcode, addresses: readonly string[], ttlSeconds: number): Buffer {
  const records = addresses.map((address) => {
    const rdata = addressBytes(address, query.type);
    const record = Buffer.alloc(12 + rdata.length);
    record.writeUInt16BE(0xc000 | HEADER, 0);
    record.writeUInt16BE(query.type, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(ttlSeconds, 6);
    record.writeUInt16BE(rdata.length, 10);
    rdata.copy(record, 12);
    return record;
  });
  return Buffer.concat([header(query.id, query.recursionDesired, rcode, 1, records.length), query.question, ...records]);
}

/** The answer to a query that could not be read, when its id could: no question, only why not. */
export function dnsRefusalAnswer(refusal: DnsRefusal & { id: number }): Buffer {
  return header(refusal.id, false, refusal.rcode, 0, 0);
}

export function isInternetClass(query: DnsQuery): boolean {
  return query.qclass === CLASS_IN;
}

/**
 * DNS over TCP's framing (a 16-bit length before each message), which the agent uses for UDP
 * queries too. Sans-io: fed chunks, hands back whole messages; at most one message is held.
 */
export class DnsFrames {
  private held: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.held = this.held.length === 0 ? chunk : Buffer.concat([this.held, chunk]);
    const messages: Buffer[] = [];
    while (this.held.length >= 2) {
      const length = this.held.readUInt16BE(0);
      if (this.held.length < 2 + length) break;
      messages.push(this.held.subarray(2, 2 + length));
      this.held = this.held.subarray(2 + length);
    }
    return messages;
  }

  /** Bytes of a message not yet complete. */
  get pending(): number {
    return this.held.length;
  }
}

export function framed(message: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(message.length, 0);
  return Buffer.concat([length, message]);
}
