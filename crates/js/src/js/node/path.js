// node:path for plugins: the pure POSIX functions, with Node's semantics. Paths are strings
// only; nothing here touches a file system (`resolve` treats "/" as the working directory).

export const sep = "/";
export const delimiter = ":";

function assertPath(p, name = "path") {
  if (typeof p !== "string") throw new TypeError(`The "${name}" argument must be of type string. Received ${typeof p}`);
}

/** Resolves `.` and `..` segments; `absolute` keeps leading `..` out of the result. */
function normalizeSegments(path, absolute) {
  const out = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length && out[out.length - 1] !== "..") out.pop();
      else if (!absolute) out.push("..");
    } else out.push(part);
  }
  return out.join("/");
}

export function normalize(path) {
  assertPath(path);
  if (path === "") return ".";
  const absolute = path.startsWith("/");
  const trailing = path.endsWith("/");
  let body = normalizeSegments(path, absolute);
  if (body === "" && !absolute) body = ".";
  if (body !== "" && trailing) body += "/";
  return absolute ? `/${body}` : body;
}

export function join(...parts) {
  parts.forEach((p) => assertPath(p));
  const joined = parts.filter((p) => p !== "").join("/");
  return joined === "" ? "." : normalize(joined);
}

export function resolve(...parts) {
  let resolved = "";
  for (let i = parts.length - 1; i >= 0 && !resolved.startsWith("/"); i--) {
    assertPath(parts[i], `paths[${i}]`);
    if (parts[i] === "") continue;
    resolved = resolved === "" ? parts[i] : `${parts[i]}/${resolved}`;
  }
  if (!resolved.startsWith("/")) resolved = `/${resolved}`;
  const body = normalizeSegments(resolved, true);
  return `/${body}`;
}

export function isAbsolute(path) {
  assertPath(path);
  return path.startsWith("/");
}

export function dirname(path) {
  assertPath(path);
  if (path === "") return ".";
  let end = path.length;
  while (end > 1 && path[end - 1] === "/") end--;
  const slash = path.lastIndexOf("/", end - 1);
  if (slash === -1) return ".";
  if (slash === 0) return "/";
  let cut = slash;
  while (cut > 1 && path[cut - 1] === "/") cut--;
  return path.slice(0, cut);
}

export function basename(path, suffix) {
  assertPath(path);
  let end = path.length;
  while (end > 0 && path[end - 1] === "/") end--;
  const base = path.slice(path.lastIndexOf("/", end - 1) + 1, end);
  if (typeof suffix === "string" && suffix !== base && base.endsWith(suffix)) return base.slice(0, base.length - suffix.length);
  return base;
}

export function extname(path) {
  const base = basename(path);
  const dot = base.lastIndexOf(".");
  if (dot <= 0) return "";
  return base.slice(dot);
}

export function relative(from, to) {
  const a = resolve(from).split("/").filter(Boolean);
  const b = resolve(to).split("/").filter(Boolean);
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return [...a.slice(i).map(() => ".."), ...b.slice(i)].join("/");
}

export function parse(path) {
  assertPath(path);
  const root = path.startsWith("/") ? "/" : "";
  const base = basename(path);
  const ext = extname(path);
  let dir = dirname(path);
  if (dir === "." && !path.includes("/")) dir = "";
  return { root, dir, base, ext, name: ext ? base.slice(0, base.length - ext.length) : base };
}

export function format(parts) {
  const dir = parts.dir || parts.root || "";
  const base = parts.base || `${parts.name || ""}${parts.ext ? (parts.ext.startsWith(".") ? "" : ".") + parts.ext : ""}`;
  if (!dir) return base;
  return dir === parts.root ? `${dir}${base}` : `${dir}/${base}`;
}

export function toNamespacedPath(path) {
  return path;
}

const posix = { sep, delimiter, normalize, join, resolve, isAbsolute, dirname, basename, extname, relative, parse, format, toNamespacedPath };
posix.posix = posix;
export { posix };
export default posix;
