import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';

// A file written chunk by chunk with backpressure: memory holds one chunk, not the export.

export interface ChunkSink {
  write(chunk: string): Promise<void>;
}

export class FileSink implements ChunkSink {
  private readonly out: WriteStream;

  constructor(path: string) {
    // wx: an export never replaces a file; the caller writes to a fresh temporary name.
    this.out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
  }

  async write(chunk: string): Promise<void> {
    if (!this.out.write(chunk)) await once(this.out, 'drain');
  }

  async close(): Promise<number> {
    this.out.end();
    await once(this.out, 'finish');
    return this.out.bytesWritten;
  }

  destroy(): void {
    this.out.destroy();
  }
}
