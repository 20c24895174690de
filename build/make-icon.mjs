// Writes build/icon.png, the app icon electron-builder turns into the Linux icon set and the macOS
// .icns: 512x512 RGBA, a rounded dark tile with a green capsule (the VM) holding a ">" prompt.
// Drawn pixel by pixel with signed-distance shapes and encoded with zlib, so no image tool or
// network is needed and the PNG is reproducible: `node build/make-icon.mjs` rewrites the same bytes.
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

const SIZE = 512;

function crc32(bytes) {
  let c;
  let crc = 0xffffffff;
  for (const b of bytes) {
    c = (crc ^ b) & 0xff;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    crc = (crc >>> 8) ^ c;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

// Signed distance to a rounded box centred at (cx, cy) with half-extents (hx, hy), corner radius r.
function roundedBox(x, y, cx, cy, hx, hy, r) {
  const qx = Math.abs(x - cx) - hx + r;
  const qy = Math.abs(y - cy) - hy + r;
  return Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - r;
}

// Signed distance to a segment of thickness w.
function segment(x, y, ax, ay, bx, by, w) {
  const px = x - ax,
    py = y - ay,
    dx = bx - ax,
    dy = by - ay;
  const t = Math.max(0, Math.min(1, (px * dx + py * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - dx * t, py - dy * t) - w / 2;
}

// Coverage of a shape from its distance, one pixel of anti-aliasing.
const cover = (d) => Math.max(0, Math.min(1, 0.5 - d));

function over(dst, rgb, a) {
  const out = dst[3] + a * (1 - dst[3]);
  if (out === 0) return [0, 0, 0, 0];
  return [0, 1, 2].map((i) => (rgb[i] * a + dst[i] * dst[3] * (1 - a)) / out).concat(out);
}

const raw = Buffer.alloc(SIZE * (SIZE * 4 + 1));
for (let y = 0; y < SIZE; y++) {
  raw[y * (SIZE * 4 + 1)] = 0; // filter: none
  for (let x = 0; x < SIZE; x++) {
    const px = x + 0.5,
      py = y + 0.5;
    let c = [0, 0, 0, 0];
    c = over(c, [17, 19, 24], cover(roundedBox(px, py, 256, 256, 232, 232, 96)));
    const capsule = roundedBox(px, py, 256, 256, 176, 104, 104);
    c = over(c, [46, 204, 113], cover(capsule));
    c = over(c, [17, 19, 24], cover(roundedBox(px, py, 256, 256, 150, 78, 78)));
    const chevron = Math.min(segment(px, py, 176, 206, 236, 256, 30), segment(px, py, 236, 256, 176, 306, 30));
    c = over(c, [46, 204, 113], cover(chevron));
    c = over(c, [230, 234, 240], cover(roundedBox(px, py, 296, 300, 44, 13, 6)));
    const o = y * (SIZE * 4 + 1) + 1 + x * 4;
    raw[o] = Math.round(c[0]);
    raw[o + 1] = Math.round(c[1]);
    raw[o + 2] = Math.round(c[2]);
    raw[o + 3] = Math.round(c[3] * 255);
  }
}

const header = Buffer.alloc(13);
header.writeUInt32BE(SIZE, 0);
header.writeUInt32BE(SIZE, 4);
header.writeUInt8(8, 8); // bit depth
header.writeUInt8(6, 9); // colour type: RGBA
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk('IHDR', header),
  chunk('IDAT', deflateSync(raw, { level: 9 })),
  chunk('IEND', Buffer.alloc(0)),
]);
const out = fileURLToPath(new URL('./icon.png', import.meta.url));
writeFileSync(out, png);
console.log(`wrote ${out} (${png.length} bytes, ${SIZE}x${SIZE})`);
