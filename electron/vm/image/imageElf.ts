/**
 * The ELF program interpreter (PT_INTERP) of an executable, or null when it has none: a static
 * binary, or not an ELF file at all (a script). The minimal image has no libc, so busybox must be
 * static and a dynamic agent needs its libraries copied in.
 */
export function elfInterpreter(bytes: Uint8Array): string | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (buf.length < 64 || buf.readUInt32BE(0) !== 0x7f454c46) return null;
  const is64 = buf[4] === 2;
  const little = buf[5] === 1;
  const u16 = (at: number): number => (little ? buf.readUInt16LE(at) : buf.readUInt16BE(at));
  const u32 = (at: number): number => (little ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  const word = (at: number): number => (is64 ? Number(little ? buf.readBigUInt64LE(at) : buf.readBigUInt64BE(at)) : u32(at));
  const phoff = word(is64 ? 0x20 : 0x1c);
  const phentsize = u16(is64 ? 0x36 : 0x2a);
  const phnum = u16(is64 ? 0x38 : 0x2c);
  for (let i = 0; i < phnum; i += 1) {
    const at = phoff + i * phentsize;
    if (at + phentsize > buf.length) break;
    if (u32(at) !== 3) continue;
    const offset = word(at + (is64 ? 0x08 : 0x04));
    const size = word(at + (is64 ? 0x20 : 0x10));
    return buf
      .subarray(offset, offset + size)
      .toString('utf8')
      .replace(/\0+$/, '');
  }
  return null;
}
