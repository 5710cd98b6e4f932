// The window screenshots' XWD reader (window-shot.mjs), on dumps written here byte by byte.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PNG } from "pngjs";
import { decodeXwd, encodePng, isPlain } from "./window-shot.mjs";

/** An XWD dump with the given header fields over a default 2×2, 32-bit, LSB-first true-colour one. */
function xwd(pixels, fields = {}) {
  const name = Buffer.from("w\0");
  const header = {
    headerSize: 100 + name.length, fileVersion: 7, pixmapFormat: 2, pixmapDepth: 24, pixmapWidth: 2, pixmapHeight: 2,
    xoffset: 0, byteOrder: 0, bitmapUnit: 32, bitmapBitOrder: 0, bitmapPad: 32, bitsPerPixel: 32,
    bytesPerLine: 12, visualClass: 4, redMask: 0xff0000, greenMask: 0x00ff00, blueMask: 0x0000ff, bitsPerRgb: 8,
    colormapEntries: 256, ncolors: 1, windowWidth: 2, windowHeight: 2, windowX: 0, windowY: 0, windowBorderWidth: 0,
    ...fields,
  };
  const head = Buffer.alloc(100);
  Object.values(header).forEach((v, i) => head.writeUInt32BE(v >>> 0, i * 4));
  const colormap = Buffer.alloc(12 * header.ncolors);
  const body = Buffer.alloc(header.bytesPerLine * header.pixmapHeight);
  pixels.forEach((row, y) => row.forEach((p, x) => {
    if (header.byteOrder === 0) body.writeUInt32LE(p, y * header.bytesPerLine + x * 4);
    else body.writeUInt32BE(p, y * header.bytesPerLine + x * 4);
  }));
  return Buffer.concat([head, name, colormap, body]);
}

test("an XWD dump decodes to its pixels, skipping the window name, the colormap and each line's padding", () => {
  const { width, height, rgba } = decodeXwd(xwd([[0xff0000, 0x00ff00], [0x0000ff, 0x123456]]));
  assert.deepEqual([width, height], [2, 2]);
  assert.deepEqual([...rgba], [255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 0x12, 0x34, 0x56, 255]);
});

test("an MSB-first dump reads its pixels in that order", () => {
  const { rgba } = decodeXwd(xwd([[0x010203, 0], [0, 0]], { byteOrder: 1 }));
  assert.deepEqual([...rgba.subarray(0, 4)], [1, 2, 3, 255]);
});

test("channels narrower than eight bits are scaled to the full range (a 16-bit visual's masks)", () => {
  const { rgba } = decodeXwd(xwd([[0xf800 | 0x07e0 | 0x001f, 0], [0, 0]], { redMask: 0xf800, greenMask: 0x07e0, blueMask: 0x001f }));
  assert.deepEqual([...rgba.subarray(0, 4)], [255, 255, 255, 255]);
});

test("a dump it cannot read is refused with the field that says why", () => {
  assert.throws(() => decodeXwd(Buffer.alloc(10)), /not an XWD dump/);
  assert.throws(() => decodeXwd(xwd([[0, 0], [0, 0]], { fileVersion: 6 })), /file version 6/);
  assert.throws(() => decodeXwd(xwd([[0, 0], [0, 0]], { visualClass: 3 })), /visual class 3/);
  assert.throws(() => decodeXwd(xwd([[0, 0], [0, 0]]).subarray(0, 120)), /cut short/);
});

test("the decoded pixels round-trip through the PNG written", () => {
  const decoded = decodeXwd(xwd([[0xff0000, 0x00ff00], [0x0000ff, 0x123456]]));
  const png = PNG.sync.read(encodePng(decoded));
  assert.deepEqual([png.width, png.height], [2, 2]);
  assert.deepEqual([...png.data], [...decoded.rgba]);
});

test("a dump of one colour is told apart from a painted one", () => {
  assert.equal(isPlain(decodeXwd(xwd([[0x202020, 0x202020], [0x202020, 0x202020]]))), true);
  assert.equal(isPlain(decodeXwd(xwd([[0x202020, 0x202020], [0x202020, 0x202021]]))), false);
});
