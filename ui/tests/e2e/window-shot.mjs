// Screenshots of the real window as the X server holds it: `xwd` (Debian's x11-apps) dumps the
// window, this module turns the dump into a PNG (pngjs).
//
// Why not WebDriver's screenshot: where the machine has no GPU render node the studio turns
// WebKit's compositing off (src-tauri/src/rendering.rs), and WebKitWebDriver's screenshot then
// waits for a presentation update that an idle page never makes, so the request hangs. The X
// server's copy is what the author sees, in either mode.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { PNG } from "pngjs";

const run = promisify(execFile);

/** The XWD header's 25 big-endian 32-bit fields (X11/XWDFile.h), in order. */
const FIELDS = [
  "headerSize", "fileVersion", "pixmapFormat", "pixmapDepth", "pixmapWidth", "pixmapHeight", "xoffset",
  "byteOrder", "bitmapUnit", "bitmapBitOrder", "bitmapPad", "bitsPerPixel", "bytesPerLine", "visualClass",
  "redMask", "greenMask", "blueMask", "bitsPerRgb", "colormapEntries", "ncolors", "windowWidth",
  "windowHeight", "windowX", "windowY", "windowBorderWidth",
];
const Z_PIXMAP = 2;
const TRUE_COLOR = 4;
const DIRECT_COLOR = 5;
/** Bytes of one colormap entry (pixel, red, green, blue, flags, pad). */
const COLOR_SIZE = 12;

/** A channel's 8-bit value from a pixel, by the channel's mask. */
function channel(pixel, mask) {
  if (mask === 0) return 0;
  const shift = 31 - Math.clz32(mask & -mask); // the lowest set bit
  const width = 32 - Math.clz32(mask >>> shift);
  const value = (pixel & mask) >>> shift;
  return width >= 8 ? value >>> (width - 8) : Math.round((value * 255) / ((1 << width) - 1));
}

/**
 * Decodes an XWD dump of a true-colour window (what `xwd` writes for a 24- or 32-bit visual)
 * into RGBA pixels. Anything else is refused with the field that says why.
 */
export function decodeXwd(buffer) {
  if (buffer.length < FIELDS.length * 4) throw new Error(`not an XWD dump: ${buffer.length} bytes, the header alone has ${FIELDS.length * 4}`);
  const h = Object.fromEntries(FIELDS.map((name, i) => [name, buffer.readUInt32BE(i * 4)]));
  if (h.fileVersion !== 7) throw new Error(`XWD file version ${h.fileVersion}, only 7 is read`);
  if (h.pixmapFormat !== Z_PIXMAP) throw new Error(`XWD pixmap format ${h.pixmapFormat}, only ZPixmap (2) is read`);
  if (h.visualClass !== TRUE_COLOR && h.visualClass !== DIRECT_COLOR) throw new Error(`XWD visual class ${h.visualClass}, only true and direct colour are read`);
  if (h.bitsPerPixel !== 32 && h.bitsPerPixel !== 24) throw new Error(`XWD with ${h.bitsPerPixel} bits per pixel, only 24 and 32 are read`);
  const { pixmapWidth: width, pixmapHeight: height, bytesPerLine } = h;
  const start = h.headerSize + h.ncolors * COLOR_SIZE;
  if (buffer.length < start + height * bytesPerLine) throw new Error(`XWD dump cut short: ${buffer.length} bytes, ${start + height * bytesPerLine} expected`);
  const bytes = h.bitsPerPixel / 8;
  const rgba = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    const line = start + y * bytesPerLine;
    for (let x = 0; x < width; x++) {
      const at = line + x * bytes;
      const pixel = bytes === 4
        ? (h.byteOrder === 0 ? buffer.readUInt32LE(at) : buffer.readUInt32BE(at))
        : (h.byteOrder === 0 ? buffer.readUIntLE(at, 3) : buffer.readUIntBE(at, 3));
      const out = (y * width + x) * 4;
      rgba[out] = channel(pixel, h.redMask);
      rgba[out + 1] = channel(pixel, h.greenMask);
      rgba[out + 2] = channel(pixel, h.blueMask);
      rgba[out + 3] = 255;
    }
  }
  return { width, height, rgba };
}

/** The PNG bytes of decoded pixels. */
export function encodePng({ width, height, rgba }) {
  const png = new PNG({ width, height });
  rgba.copy(png.data);
  return PNG.sync.write(png);
}

/** Whether every pixel has one colour (a window not painted yet, or a black dump). */
export function isPlain({ rgba }) {
  for (let i = 4; i < rgba.length; i += 4) {
    if (rgba.readUInt32BE(i) !== rgba.readUInt32BE(0)) return false;
  }
  return true;
}

/**
 * Writes the window titled `title` on the current X display to `file` as a PNG, and returns its
 * size. A dump of one colour is refused: it shows nothing an author would see.
 */
export async function saveWindowShot(title, file) {
  const { stdout } = await run("xwd", ["-silent", "-nobdrs", "-name", title], { encoding: "buffer", maxBuffer: 256 << 20 }).catch((error) => {
    if (error.code === "ENOENT") throw new Error("xwd is not installed: it comes with Debian's x11-apps, which scripts/setup installs");
    throw new Error(`xwd could not dump the window "${title}": ${String(error.stderr || error.message).trim()}`);
  });
  const decoded = decodeXwd(stdout);
  if (isPlain(decoded)) throw new Error(`the window "${title}" is a single colour: nothing was painted`);
  await writeFile(file, encodePng(decoded));
  return { width: decoded.width, height: decoded.height };
}
