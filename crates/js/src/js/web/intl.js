// The sandbox's `Intl` (QuickJS has none): Segmenter, Collator, NumberFormat, PluralRules and
// DateTimeFormat over ICU4X and its compiled CLDR data (crates/js/src/intl.rs). The bootstrap
// defines the global to load this module on first use, so a plugin that never touches `Intl`
// pays nothing. Dates are written in UTC (the sandbox has no time zone database).
import { canonicalLocale, segment, compare, pluralCategory, formatDecimal, formatDate } from "covel:intl-host";

/** The first requested locale, canonical (`undefined` or `[]`: the default, en-US). */
function localeOf(locales) {
  const list = locales === undefined ? [] : typeof locales === "string" ? [locales] : [...locales];
  return canonicalLocale(list.length ? `${list[0]}` : "");
}

function optionsOf(options) {
  if (options === undefined) return {};
  if (options === null || typeof options !== "object") throw new TypeError("Intl: options must be an object");
  return options;
}

/** An option among `allowed`, or its `fallback` when absent. */
function pick(options, name, allowed, fallback) {
  const value = options[name];
  if (value === undefined) return fallback;
  const text = `${value}`;
  if (!allowed.includes(text)) throw new RangeError(`Intl: ${name} must be one of ${allowed.join(", ")} (not ${text})`);
  return text;
}

/** A whole-number option within [min, max], or `fallback`. */
function digits(options, name, min, max, fallback) {
  const value = options[name];
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max) throw new RangeError(`Intl: ${name} must be from ${min} to ${max}`);
  return Math.floor(n);
}

const supportedLocalesOf = (locales) => (locales === undefined ? [] : typeof locales === "string" ? [locales] : [...locales]).map((l) => canonicalLocale(`${l}`));

// ---- Segmenter ----------------------------------------------------------------------------------

class Segments {
  #input;
  #granularity;
  #boundaries = null;
  #wordLike = null;

  constructor(input, granularity) {
    this.#input = input;
    this.#granularity = granularity;
  }

  // Boundaries are found once, on the first read: `segment()` alone costs nothing.
  #found() {
    if (this.#boundaries === null) {
      const [boundaries, wordLike] = segment(this.#granularity, this.#input);
      this.#boundaries = boundaries;
      this.#wordLike = wordLike ?? null;
    }
    return this.#boundaries;
  }

  #data(i) {
    const b = this.#boundaries;
    const data = { segment: this.#input.slice(b[i], b[i + 1]), index: b[i], input: this.#input };
    // The host answers one flag per segment, in order.
    if (this.#wordLike !== null) data.isWordLike = this.#wordLike[i] === 1;
    return data;
  }

  /** The segment that contains the code unit at `index` (undefined outside the text). */
  containing(index = 0) {
    const at = Math.trunc(Number(index)) || 0;
    if (at < 0 || at >= this.#input.length) return undefined;
    const b = this.#found();
    let low = 0;
    let high = b.length - 1;
    while (high - low > 1) {
      const mid = (low + high) >>> 1;
      if (b[mid] <= at) low = mid;
      else high = mid;
    }
    return this.#data(low);
  }

  *[Symbol.iterator]() {
    const b = this.#found();
    for (let i = 0; i + 1 < b.length; i++) yield this.#data(i);
  }
}

export class Segmenter {
  #locale;
  #granularity;

  constructor(locales, options) {
    const opts = optionsOf(options);
    this.#locale = localeOf(locales);
    this.#granularity = pick(opts, "granularity", ["grapheme", "word", "sentence"], "grapheme");
  }

  segment(input) {
    return new Segments(`${input}`, this.#granularity);
  }

  resolvedOptions() {
    return { locale: this.#locale, granularity: this.#granularity };
  }

  static supportedLocalesOf(locales) {
    return supportedLocalesOf(locales);
  }
}

// ---- Collator -----------------------------------------------------------------------------------

export class Collator {
  #locale;
  #sensitivity;
  #numeric;
  #usage;
  #compare = null;

  constructor(locales, options) {
    const opts = optionsOf(options);
    this.#locale = localeOf(locales);
    this.#usage = pick(opts, "usage", ["sort", "search"], "sort");
    this.#sensitivity = pick(opts, "sensitivity", ["base", "accent", "case", "variant"], "variant");
    this.#numeric = Boolean(opts.numeric);
  }

  /** A bound compare function, as ECMA-402 defines the getter (usable as `arr.sort(c.compare)`). */
  get compare() {
    if (this.#compare === null) {
      const locale = this.#locale;
      const sensitivity = this.#sensitivity;
      const numeric = this.#numeric;
      this.#compare = (a, b) => compare(locale, sensitivity, numeric, `${a}`, `${b}`);
    }
    return this.#compare;
  }

  resolvedOptions() {
    return { locale: this.#locale, usage: this.#usage, sensitivity: this.#sensitivity, ignorePunctuation: false, collation: "default", numeric: this.#numeric, caseFirst: "false" };
  }

  static supportedLocalesOf(locales) {
    return supportedLocalesOf(locales);
  }
}

// ---- NumberFormat -------------------------------------------------------------------------------

export class NumberFormat {
  #locale;
  #style;
  #min;
  #max;
  #grouping;

  constructor(locales, options) {
    const opts = optionsOf(options);
    this.#locale = localeOf(locales);
    this.#style = pick(opts, "style", ["decimal", "percent", "currency", "unit"], "decimal");
    if (this.#style === "currency" || this.#style === "unit") {
      throw new RangeError(`Intl.NumberFormat: style "${this.#style}" is not supported in the Covel sandbox (decimal and percent are)`);
    }
    const defaultMax = this.#style === "percent" ? 0 : 3;
    this.#min = digits(opts, "minimumFractionDigits", 0, 100, 0);
    this.#max = Math.max(this.#min, digits(opts, "maximumFractionDigits", 0, 100, Math.max(this.#min, defaultMax)));
    this.#grouping = opts.useGrouping === undefined ? true : opts.useGrouping !== false && opts.useGrouping !== "false";
  }

  get format() {
    return (value) => {
      const n = Number(value);
      if (this.#style === "percent") {
        // ICU4X 2 formats decimals; en and zh (the studio's locales) write a percent as the
        // number followed by `%`.
        return `${formatDecimal(this.#locale, n * 100, this.#min, this.#max, this.#grouping)}%`;
      }
      return formatDecimal(this.#locale, n, this.#min, this.#max, this.#grouping);
    };
  }

  resolvedOptions() {
    return { locale: this.#locale, numberingSystem: "latn", style: this.#style, minimumIntegerDigits: 1, minimumFractionDigits: this.#min, maximumFractionDigits: this.#max, useGrouping: this.#grouping ? "auto" : false };
  }

  static supportedLocalesOf(locales) {
    return supportedLocalesOf(locales);
  }
}

// ---- PluralRules --------------------------------------------------------------------------------

export class PluralRules {
  #locale;
  #type;

  constructor(locales, options) {
    const opts = optionsOf(options);
    this.#locale = localeOf(locales);
    this.#type = pick(opts, "type", ["cardinal", "ordinal"], "cardinal");
  }

  select(value) {
    const n = Number(value);
    if (!Number.isFinite(n)) return "other";
    return pluralCategory(this.#locale, this.#type === "ordinal", n);
  }

  resolvedOptions() {
    return { locale: this.#locale, type: this.#type };
  }

  static supportedLocalesOf(locales) {
    return supportedLocalesOf(locales);
  }
}

// ---- DateTimeFormat -----------------------------------------------------------------------------

const STYLES = ["short", "medium", "long", "full"];

export class DateTimeFormat {
  #locale;
  #dateStyle;
  #timeStyle;

  constructor(locales, options) {
    const opts = optionsOf(options);
    this.#locale = localeOf(locales);
    this.#dateStyle = pick(opts, "dateStyle", STYLES, undefined);
    this.#timeStyle = pick(opts, "timeStyle", STYLES, undefined);
    const zone = opts.timeZone === undefined ? "UTC" : `${opts.timeZone}`.toUpperCase();
    if (zone !== "UTC" && zone !== "ETC/UTC" && zone !== "GMT") {
      throw new RangeError(`Intl.DateTimeFormat: time zone "${opts.timeZone}" is not available in the Covel sandbox (dates are written in UTC)`);
    }
  }

  get format() {
    return (date) => {
      const at = date === undefined ? new Date() : new Date(typeof date === "object" ? date.valueOf() : date);
      if (Number.isNaN(at.valueOf())) throw new RangeError("Invalid time value");
      const level = (style) => (style === undefined ? 0 : STYLES.indexOf(style) + 1);
      const fields = [at.getUTCFullYear(), at.getUTCMonth() + 1, at.getUTCDate(), at.getUTCHours(), at.getUTCMinutes(), at.getUTCSeconds()];
      return formatDate(this.#locale, level(this.#dateStyle), level(this.#timeStyle), fields);
    };
  }

  resolvedOptions() {
    const out = { locale: this.#locale, calendar: "gregory", numberingSystem: "latn", timeZone: "UTC" };
    if (this.#dateStyle !== undefined) out.dateStyle = this.#dateStyle;
    if (this.#timeStyle !== undefined) out.timeStyle = this.#timeStyle;
    return out;
  }

  static supportedLocalesOf(locales) {
    return supportedLocalesOf(locales);
  }
}

export const Intl = Object.freeze({
  Segmenter,
  Collator,
  NumberFormat,
  PluralRules,
  DateTimeFormat,
  getCanonicalLocales: (locales) => supportedLocalesOf(locales),
  [Symbol.toStringTag]: "Intl",
});

/** `String.prototype.localeCompare(that, locales, options)` as Node answers it (a collator). */
export function localeCompare(self, that, locales, options) {
  return new Collator(locales, options).compare(self, that);
}
