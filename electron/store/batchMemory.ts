/** Below this a handed-over cell is copied rather than moved: detaching a buffer costs more than copying a small one. */
const TRANSFER_FROM = 16 << 10;

/** Byte cells below this are copied into a pack; larger ones go as their own buffer. */
const PACK_BELOW = 16 << 10;
/**
 * Under the C allocator's mmap threshold (128 KiB), so freed packs are reused from its heap: 1 MiB
 * packs were fresh pages every time, and faulting them in cost more than the copy.
 */
const PACK_BYTES = 64 << 10;

/**
 * A byte cell as the writer thread should get it on its own: a view that spans its whole
 * ArrayBuffer. postMessage copies a view's entire buffer, so a 200-byte body sliced from Node's
 * 8 KiB Buffer pool would cost 8 KiB of copying. A narrower view is copied out at its own size,
 * never more than the clone would have copied.
 */
function wholeBuffer(value: Uint8Array): Uint8Array {
  const whole = value.byteOffset === 0 && value.buffer instanceof ArrayBuffer && value.byteLength === value.buffer.byteLength;
  return whole ? value : new Uint8Array(value);
}

/**
 * The memory one batch moves to the writer thread. Small byte cells are copied into packs that
 * move with the batch, each cell a view into its pack: cloned, every body became an ArrayBuffer of
 * its own, allocated and copied on both threads.
 */
export class BatchMemory {
  /** Memory moved to the writer thread instead of copied: packs, and cells handed over. */
  readonly transfer: ArrayBuffer[] = [];
  private pack: ArrayBuffer | null = null;
  private packUsed = 0;

  /** The cell as the batch carries it. With `handOver` a large cell's memory is moved and reads as empty here afterwards. */
  carry(value: Uint8Array, handOver: boolean): Uint8Array {
    if (handOver && value.byteLength >= TRANSFER_FROM) {
      const whole = wholeBuffer(value);
      const memory = whole.buffer as ArrayBuffer;
      if (!this.transfer.includes(memory)) this.transfer.push(memory);
      return whole;
    }
    return value.byteLength < PACK_BELOW ? this.packed(value) : wholeBuffer(value);
  }

  private packed(value: Uint8Array): Uint8Array {
    if (!this.pack || this.packUsed + value.byteLength > this.pack.byteLength) {
      // Not zeroed: only the views' own bytes are ever read.
      this.pack = Buffer.allocUnsafeSlow(PACK_BYTES).buffer as ArrayBuffer;
      this.packUsed = 0;
      this.transfer.push(this.pack);
    }
    const view = new Uint8Array(this.pack, this.packUsed, value.byteLength);
    view.set(value);
    this.packUsed += value.byteLength;
    return view;
  }
}
