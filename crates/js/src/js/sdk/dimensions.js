// @covel/plugin-handlers-utils/dimensions — world dimensions: value schemas, records,
// snapshots, clock-derived fields, update proposals and queries (upstream 0.0.50 surface).
import { z } from "zod";
import { resolveI18nText, instructionLocaleFor } from "@covel/plugin-handlers-utils";

const hasOwn = (object, key) => object != null && Object.prototype.hasOwnProperty.call(object, key);
/** The own value under a key that came from data (never an inherited `constructor`). */
const ownValue = (object, key) => (hasOwn(object, key) ? object[key] : undefined);
/**
 * Sets a key that came from data as an own property, as JSON.parse does: assigned, a key
 * `__proto__` would replace the object's prototype instead (the key lost, and an object of
 * the data's choosing inherited).
 */
const setOwn = (object, key, value) =>
  Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const copyJson = (value) => (typeof globalThis.structuredClone === "function" ? globalThis.structuredClone(value) : JSON.parse(JSON.stringify(value)));

const ZOD_READY = Boolean(z && typeof z.lazy === "function" && typeof z.preprocess === "function" && typeof z.custom === "function");
function withZod(name, build) {
  if (ZOD_READY) return build();
  const fail = () => {
    throw new Error(`${name} needs the zod 4 package, which this host does not provide`);
  };
  return Object.freeze({ parse: fail, safeParse: fail, pick: fail, _unavailable: name });
}

// ============================================================================================
// Constants
// ============================================================================================

/** Plugin-data namespace of the stored dimension records. */
export const DIMENSION_DATA_NAMESPACE = "_dimensions";
/** Plugin-data namespace of the settlement receipts. */
export const DIMENSION_SETTLEMENT_NAMESPACE = "_dimension-settlements";
/** The contract id of world dimensions. */
export const DIMENSION_CONTRACT = "world.dimensions@1";
/** Deepest nesting of a dimension JSON value. */
export const DIMENSION_MAX_DEPTH = 32;
/** Most nodes in a dimension JSON value. */
export const DIMENSION_MAX_NODES = 10000;
/** Largest serialized dimension JSON value, in UTF-8 bytes. */
export const DIMENSION_MAX_BYTES = 262144;
/** Most updates in one `dimension.update` proposal. */
export const DIMENSION_MAX_UPDATES = 64;

// Studio names kept for existing plugins.
/** Studio alias of DIMENSION_DATA_NAMESPACE. */
export const DIMENSIONS_NAMESPACE = DIMENSION_DATA_NAMESPACE;
/** Studio alias of DIMENSION_SETTLEMENT_NAMESPACE. */
export const DIMENSION_SETTLEMENTS_NAMESPACE = DIMENSION_SETTLEMENT_NAMESPACE;
/** Studio: the limits above as one object. */
export const DIMENSION_LIMITS = Object.freeze({
  maxDepth: DIMENSION_MAX_DEPTH,
  maxNodes: DIMENSION_MAX_NODES,
  maxBytes: DIMENSION_MAX_BYTES,
  maxUpdates: DIMENSION_MAX_UPDATES,
});

const DIMENSION_ID_RE = /^[a-z][a-zA-Z0-9_-]{0,63}$/;
const UNSAFE_IDS = ["__proto__", "prototype", "constructor"];

/** Studio: whether `id` is a valid dimension id (what dimensionIdSchema accepts). */
export function isDimensionId(id) {
  return typeof id === "string" && DIMENSION_ID_RE.test(id) && !UNSAFE_IDS.includes(id);
}

// ============================================================================================
// Bounded JSON
// ============================================================================================

function utf8Length(text) {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Why a value is not bounded JSON (too many nodes, too deep, a non-finite number, a non-plain
 * object, a cycle, symbol keys, accessors, over 256 KB), or `undefined` when it is.
 */
export function dimensionJsonError(value) {
  let nodes = 0;
  const ancestors = new Set();
  const visit = (input, depth) => {
    if (++nodes > DIMENSION_MAX_NODES) return "JSON node limit exceeded";
    if (depth > DIMENSION_MAX_DEPTH) return "JSON depth limit exceeded";
    if (input === null || typeof input === "boolean") return undefined;
    if (typeof input === "number") return Number.isFinite(input) ? undefined : "JSON numbers must be finite";
    if (typeof input === "string") return input.length <= DIMENSION_MAX_BYTES ? undefined : "JSON size limit exceeded";
    if (typeof input !== "object") return "Expected a JSON value";
    const proto = Object.getPrototypeOf(input);
    if (!Array.isArray(input) && proto !== Object.prototype && proto !== null) return "Expected a plain JSON object";
    if (ancestors.has(input)) return "Cyclic JSON value";
    ancestors.add(input);
    if (Object.getOwnPropertySymbols(input).length > 0) return "JSON symbol keys are not supported";
    for (const key of Object.getOwnPropertyNames(input)) {
      const d = Object.getOwnPropertyDescriptor(input, key);
      if (d && (d.get || d.set)) return "JSON accessors are not supported";
    }
    for (const child of Array.isArray(input) ? input : Object.values(input)) {
      const error = visit(child, depth + 1);
      if (error) return error;
    }
    ancestors.delete(input);
    return undefined;
  };
  const error = visit(value, 0);
  if (error) return error;
  const text = JSON.stringify(value);
  if (text !== undefined && utf8Length(text) > DIMENSION_MAX_BYTES) return "JSON size limit exceeded";
  return undefined;
}

function equalJson(left, right) {
  if (Object.is(left, right)) return true;
  if (left === null || right === null || typeof left !== "object" || typeof right !== "object") return false;
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  const a = Object.keys(left);
  const b = Object.keys(right);
  return a.length === b.length && a.every((key) => hasOwn(right, key) && equalJson(left[key], right[key]));
}

const isText = (value) =>
  typeof value === "string" || (isObject(value) && Object.values(value).every((v) => typeof v === "string"));

// ============================================================================================
// Derived fields (x-derive)
// ============================================================================================

/**
 * The derived fields of a schema: `[{path, schema, derivation}]` for the value itself or any
 * property reached through `properties` that carries `x-derive`.
 */
export function derivedDimensionFields(schema) {
  const fields = [];
  const visit = (node, path) => {
    if (!isObject(node)) return;
    if (node["x-derive"]) {
      fields.push({ path, schema: node, derivation: node["x-derive"] });
      return;
    }
    for (const [key, child] of Object.entries(node.properties ?? {})) visit(child, [...path, key]);
  };
  visit(schema, []);
  return fields;
}

/** `start + perUnit * source` (defaults 0 and 1), held inside `min`/`max`. */
export function deriveDimensionNumber(derivation, source) {
  const linear = (derivation.start ?? 0) + (derivation.perUnit ?? 1) * source;
  return Math.min(derivation.max ?? Infinity, Math.max(derivation.min ?? -Infinity, linear));
}

/**
 * The value of a derived field for one source value: the number (rounded for an integer
 * field), or the `value` of the first of `ranges` that holds it.
 */
export function deriveDimensionValue(schema, derivation, source) {
  const number = deriveDimensionNumber(derivation, source);
  if (!derivation.ranges) return schema?.type === "integer" ? Math.round(number) : number;
  const range = derivation.ranges.find(
    ({ from, to }) => (from === undefined || number >= from) && (to === undefined || number <= to),
  );
  return (range ?? derivation.ranges[derivation.ranges.length - 1]).value;
}

function sourceOf(derivation, sources) {
  const value = derivation.source === "clock.elapsedSinceStart" ? sources?.clock?.elapsedSinceStart : undefined;
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function readAt(value, path) {
  let node = value;
  for (const key of path) {
    if (!isObject(node) || !hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return { value: node };
}

/** Sets a field inside `value` (already a copy); a missing parent is not created. */
function writeAt(value, path, field) {
  if (path.length === 0) return field;
  let node = value;
  for (const key of path.slice(0, -1)) {
    if (!isObject(node) || !hasOwn(node, key)) return value;
    node = node[key];
  }
  if (isObject(node)) node[path[path.length - 1]] = field;
  return value;
}

/** `value` with every derived field set to what its source gives now; fields without a source stay. */
export function applyDimensionDerivations(schema, value, sources) {
  let next = copyJson(value);
  for (const field of derivedDimensionFields(schema)) {
    const source = sourceOf(field.derivation, sources);
    if (source === undefined) continue;
    next = writeAt(next, field.path, deriveDimensionValue(field.schema, field.derivation, source));
  }
  return next;
}

/** `written` with every derived field taken from `current`: other writers cannot change them. */
export function keepDerivedDimensionFields(schema, written, current) {
  let next = copyJson(written);
  for (const { path } of derivedDimensionFields(schema)) {
    const kept = readAt(current, path);
    if (kept) next = writeAt(next, path, copyJson(kept.value));
  }
  return next;
}

/** The schema without its derived fields (and their `required` entries); `undefined` when all of it is derived. */
export function dimensionSchemaWithoutDerived(schema) {
  if (schema["x-derive"]) return undefined;
  if (!schema.properties) return schema;
  // Own keys (`Object.fromEntries`), as JSON.parse makes them: a `__proto__` key stays a key.
  const properties = Object.fromEntries(
    Object.entries(schema.properties)
      .map(([key, child]) => [key, dimensionSchemaWithoutDerived(child)])
      .filter(([, kept]) => kept),
  );
  return {
    ...schema,
    properties,
    ...(schema.required ? { required: schema.required.filter((key) => hasOwn(properties, key)) } : {}),
  };
}

/** The value without its derived fields; the partner of dimensionSchemaWithoutDerived. */
export function dimensionValueWithoutDerived(schema, value) {
  if (!schema.properties || !isObject(value)) return value;
  const entries = [];
  for (const [key, item] of Object.entries(value)) {
    const child = hasOwn(schema.properties, key) ? schema.properties[key] : undefined;
    if (child?.["x-derive"]) continue;
    entries.push([key, child ? dimensionValueWithoutDerived(child, item) : item]);
  }
  return Object.fromEntries(entries);
}

// ============================================================================================
// Value validation
// ============================================================================================

function matchesType(value, type) {
  if (type === "null") return value === null;
  if (type === "array") return Array.isArray(value);
  if (type === "object") return isObject(value);
  if (type === "integer") return typeof value === "number" && Number.isInteger(value);
  return typeof value === type;
}

/** Checks a value against a (checked) schema node; appends `{path, message}` issues. */
function checkValue(node, input, path, options, issues) {
  const add = (message, at = path) => issues.push({ path: at, message });
  if (node["x-i18n"]) {
    if (options.localized === "resolved" && typeof input !== "string") {
      add("Expected a string. Write this text once, in the session language; do not supply a locale map");
      return;
    }
    if (!isText(input)) {
      add("Expected I18nText at an x-i18n node");
      return;
    }
    const plain = { ...node, "x-i18n": false };
    if (typeof input === "string") checkValue(plain, input, path, options, issues);
    else for (const [locale, text] of Object.entries(input)) checkValue(plain, text, [...path, locale], options, issues);
    return;
  }
  const types = node.type === undefined ? undefined : typeof node.type === "string" ? [node.type] : node.type;
  if (types && !types.some((type) => matchesType(input, type))) {
    add(`Expected ${types.join(" | ")}`);
    return;
  }
  if (node.enum && !node.enum.some((item) => equalJson(item, input))) add("Value is not in enum");
  if (hasOwn(node, "const") && !equalJson(node.const, input)) add("Value does not match const");
  if (typeof input === "number") {
    if (node.minimum !== undefined && input < node.minimum) add(`Minimum is ${node.minimum}`);
    if (node.maximum !== undefined && input > node.maximum) add(`Maximum is ${node.maximum}`);
    if (node.exclusiveMinimum !== undefined && input <= node.exclusiveMinimum) add(`Must exceed ${node.exclusiveMinimum}`);
    if (node.exclusiveMaximum !== undefined && input >= node.exclusiveMaximum) add(`Must be below ${node.exclusiveMaximum}`);
  }
  if (typeof input === "string") {
    const length = Array.from(input).length;
    if (node.minLength !== undefined && length < node.minLength) add(`Minimum length is ${node.minLength} (got ${length})`);
    if (node.maxLength !== undefined && length > node.maxLength) {
      add(`Maximum length is ${node.maxLength} (got ${length}): remove at least ${length - node.maxLength} characters`);
    }
  }
  if (Array.isArray(input)) {
    if (node.minItems !== undefined && input.length < node.minItems) add(`Minimum items is ${node.minItems}`);
    if (node.maxItems !== undefined && input.length > node.maxItems) add(`Maximum items is ${node.maxItems}`);
    if (node.items) input.forEach((item, index) => checkValue(node.items, item, [...path, index], options, issues));
  } else if (isObject(input)) {
    for (const key of node.required ?? []) if (!hasOwn(input, key)) add("Required property", [...path, key]);
    for (const [key, item] of Object.entries(input)) {
      const property = node.properties && hasOwn(node.properties, key) ? node.properties[key] : undefined;
      if (property) checkValue(property, item, [...path, key], options, issues);
      else if (node.additionalProperties === false) add("Unknown property", [...path, key]);
      else if (isObject(node.additionalProperties)) checkValue(node.additionalProperties, item, [...path, key], options, issues);
    }
  }
}

/**
 * Issues `[{path, message}]` of `value` against a dimension value schema (the closed JSON
 * Schema subset: no coercion, no defaults). `options.localized`: `"authored"` (default) lets
 * an `x-i18n` node hold a locale map, `"resolved"` (session state) only a string.
 */
export function validateDimensionValue(schema, value, options = {}) {
  const jsonError = dimensionJsonError(value);
  if (jsonError) return [{ path: [], message: jsonError }];
  let node = schema;
  if (ZOD_READY) {
    const parsed = dimensionValueSchema.safeParse(schema);
    if (!parsed.success) return [{ path: [], message: "Unsupported dimension value schema" }];
    node = parsed.data;
  } else if (!isObject(schema)) return [{ path: [], message: "Unsupported dimension value schema" }];
  const issues = [];
  checkValue(node, value, [], options, issues);
  return issues;
}

// ============================================================================================
// Zod schemas
// ============================================================================================

/** A dimension id: `^[a-z][a-zA-Z0-9_-]{0,63}$`, not `__proto__`/`prototype`/`constructor`. */
export const dimensionIdSchema = withZod("dimensionIdSchema", () =>
  z
    .string()
    .regex(DIMENSION_ID_RE)
    .refine((id) => !UNSAFE_IDS.includes(id), { message: "Unsafe dimension ID" }),
);

/** Any bounded, finite, acyclic JSON value (see dimensionJsonError). */
export const dimensionJsonSchema = withZod("dimensionJsonSchema", () =>
  z.custom((value) => dimensionJsonError(value) === undefined, { message: "Expected bounded, finite, acyclic JSON" }),
);

const textSchema = withZod("I18nText", () => z.union([z.string(), z.record(z.string(), z.string())]));
const valueTypes = ["string", "number", "integer", "boolean", "null", "object", "array"];

function typesOfNode(node) {
  return node.type === undefined ? [] : typeof node.type === "string" ? [node.type] : node.type;
}

/** Declaration problems of an `x-derive` on a schema node. */
function derivationIssues(node, derivation, ctx) {
  const at = ["x-derive"];
  const types = typesOfNode(node);
  const numeric = types.length === 0 || types.every((t) => t === "number" || t === "integer");
  if (node["x-i18n"]) ctx.addIssue({ code: "custom", path: at, message: "A derived value is not translatable text: leave out x-i18n" });
  if (derivation.min !== undefined && derivation.max !== undefined && derivation.min > derivation.max) {
    ctx.addIssue({ code: "custom", path: at, message: "x-derive min must not exceed max" });
  }
  if (!derivation.ranges) {
    if (!numeric) {
      ctx.addIssue({
        code: "custom",
        path: at,
        message: `A derived ${types.join(" | ")} needs ranges that name its values; without ranges a derivation gives a number`,
      });
      return;
    }
    // The number must stay inside what the field accepts.
    if (node.minimum !== undefined && (derivation.min === undefined || derivation.min < node.minimum)) {
      ctx.addIssue({ code: "custom", path: at, message: `The field's minimum is ${node.minimum}: set min to it or above` });
    }
    if (node.maximum !== undefined && (derivation.max === undefined || derivation.max > node.maximum)) {
      ctx.addIssue({ code: "custom", path: at, message: `The field's maximum is ${node.maximum}: set max to it or below` });
    }
    return;
  }
  const ranges = derivation.ranges;
  const last = ranges[ranges.length - 1];
  if (last.from !== undefined || last.to !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: [...at, "ranges", ranges.length - 1],
      message: "The last range must hold every number the others leave: give it no from and no to",
    });
  }
  const plain = { ...node };
  delete plain["x-derive"];
  ranges.forEach((range, index) => {
    if (range.from !== undefined && range.to !== undefined && range.from > range.to) {
      ctx.addIssue({ code: "custom", path: [...at, "ranges", index], message: "A range's from must not exceed its to" });
    }
    const problems = [];
    checkValue(plain, range.value, [], {}, problems);
    if (problems.length) {
      ctx.addIssue({
        code: "custom",
        path: [...at, "ranges", index, "value"],
        message: `${JSON.stringify(range.value)} is not a value this field allows`,
      });
    }
  });
}

const derivationSchema = withZod("x-derive", () => {
  const finite = z.number().finite();
  return z.strictObject({
    source: z.literal("clock.elapsedSinceStart").describe("What the value is computed from: the world clock's time since the start."),
    start: finite.optional().describe("The number at source 0. Default 0."),
    perUnit: finite.optional().describe("Change of the number per unit of the source. Default 1."),
    min: finite.optional().describe("Lowest number."),
    max: finite.optional().describe("Highest number."),
    ranges: z
      .array(
        z.strictObject({
          from: finite.optional(),
          to: finite.optional(),
          value: z.union([z.string(), z.number(), z.boolean()]),
        }),
      )
      .min(1)
      .optional()
      .describe("Labels by range of the number; the first range holding it gives the value, the last has no bounds."),
  });
});

const valueNodeSchema = withZod("dimensionValueSchema", () => {
  const count = z.number().int().nonnegative();
  const node = z.lazy(() =>
    z
      .strictObject({
        type: z
          .union([z.enum(valueTypes), z.array(z.enum(valueTypes)).min(1).refine((t) => new Set(t).size === t.length)])
          .optional()
          .describe("JSON type of the value, or a list of types (e.g. for a nullable value)."),
        title: textSchema.optional().describe("Display label of the node."),
        description: z.string().optional().describe("What the node holds; the model reads it."),
        enum: z.array(dimensionJsonSchema).min(1).optional().describe("The allowed values."),
        const: dimensionJsonSchema.optional().describe("The one allowed value."),
        minimum: z.number().optional().describe("Inclusive lower bound."),
        maximum: z.number().optional().describe("Inclusive upper bound."),
        exclusiveMinimum: z.number().optional().describe("Exclusive lower bound."),
        exclusiveMaximum: z.number().optional().describe("Exclusive upper bound."),
        minLength: count.optional().describe("Fewest characters."),
        maxLength: count.optional().describe("Most characters."),
        items: node.optional().describe("Schema of each array element."),
        minItems: count.optional().describe("Fewest array elements."),
        maxItems: count.optional().describe("Most array elements."),
        properties: z.record(z.string(), node).optional().describe("Schemas of named object properties."),
        required: z
          .array(z.string())
          .refine((keys) => new Set(keys).size === keys.length)
          .optional()
          .describe("Properties that must be present; each is declared in properties."),
        additionalProperties: z
          .union([z.boolean(), node])
          .optional()
          .describe("false rejects undeclared keys; a schema types dynamically named entries."),
        "x-i18n": z.boolean().optional().describe("Marks translatable text; only such nodes are localized."),
        "x-enumLabels": z.record(z.string(), textSchema).optional().describe("Display labels by enum member; never a stored value."),
        "x-derive": derivationSchema.optional().describe("Computes the value from the world clock; no model writes it."),
      })
      .superRefine((n, ctx) => {
        const labels = n["x-enumLabels"];
        if (labels) {
          const members = new Set((n.enum ?? []).filter((item) => item === null || typeof item !== "object").map(String));
          for (const key of Object.keys(labels)) {
            if (!members.has(key)) {
              ctx.addIssue({ code: "custom", path: ["x-enumLabels", key], message: "x-enumLabels keys must be scalar enum members" });
            }
          }
        }
        if (n["x-derive"]) derivationIssues(n, n["x-derive"], ctx);
      }),
  );
  return node;
});

/** Problems of a whole schema tree: undeclared `required` keys, derived fields without a fixed place. */
function treeIssues(root, ctx) {
  const visit = (node, path, fixed) => {
    if (!isObject(node)) return;
    if (node.required?.length) {
      const declared = node.properties ? Object.keys(node.properties) : [];
      for (const key of node.required) {
        if (!declared.includes(key)) {
          ctx.addIssue({ code: "custom", path: [...path, "required"], message: `Required property "${key}" is not declared in properties` });
        }
      }
    }
    if (node["x-derive"] && !fixed) {
      ctx.addIssue({
        code: "custom",
        path: [...path, "x-derive"],
        message: "A derived value needs a fixed place: the value itself or a declared property, not an array element or a dynamically named record",
      });
    }
    for (const [key, child] of Object.entries(node.properties ?? {})) visit(child, [...path, "properties", key], fixed);
    if (node.items) visit(node.items, [...path, "items"], false);
    if (isObject(node.additionalProperties)) visit(node.additionalProperties, [...path, "additionalProperties"], false);
  };
  visit(root, [], true);
}

function boundedInput(value, ctx) {
  const error = dimensionJsonError(value);
  if (error) {
    ctx.addIssue({ code: "custom", message: error });
    return z.NEVER;
  }
  return value;
}

/**
 * A dimension value schema: the closed JSON Schema subset (type, title, description, enum,
 * const, bounds, lengths, items, properties, required, additionalProperties, x-i18n,
 * x-enumLabels, x-derive). Unknown keywords are rejected.
 */
export const dimensionValueSchema = withZod("dimensionValueSchema", () =>
  z.preprocess(boundedInput, valueNodeSchema.superRefine((node, ctx) => treeIssues(node, ctx))),
);

/** One world dimension: `{name, description?, schema, initialValue, updateRule?}`; the initial value must fit the schema. */
export const worldDimensionDefinitionSchema = withZod("worldDimensionDefinitionSchema", () =>
  z
    .strictObject({
      name: textSchema
        .refine((name) => (typeof name === "string" ? [name] : Object.values(name)).some((t) => t.trim().length > 0), {
          message: "Dimension name must be non-empty",
        })
        .describe("Display name of the dimension."),
      description: textSchema.optional().describe("What the dimension tracks."),
      schema: dimensionValueSchema.describe("Value schema in the supported JSON Schema subset; unsupported keywords are rejected."),
      initialValue: dimensionJsonSchema.describe("The starting value; it must satisfy schema."),
      updateRule: textSchema
        .optional()
        .describe("How the value changes in play, in words. When present the dimension tracker settles it after each turn; leave it out for static setting."),
    })
    .superRefine((definition, ctx) => {
      for (const issue of validateDimensionValue(definition.schema, definition.initialValue)) {
        ctx.addIssue({ code: "custom", path: ["initialValue", ...issue.path], message: issue.message });
      }
      for (const field of derivedDimensionFields(definition.schema)) {
        const expected = deriveDimensionValue(field.schema, field.derivation, 0);
        const actual = readAt(definition.initialValue, field.path);
        if (!actual || !equalJson(actual.value, expected)) {
          ctx.addIssue({
            code: "custom",
            path: ["initialValue", ...field.path],
            message: `Must be ${JSON.stringify(expected)}: the value x-derive gives at the start`,
          });
        }
      }
    }),
);

function boundedMapInput(value, ctx) {
  const bounded = boundedInput(value, ctx);
  if (bounded === z.NEVER) return bounded;
  if (isObject(value)) {
    for (const key of Object.keys(value)) {
      if (!dimensionIdSchema.safeParse(key).success) {
        ctx.addIssue({ code: "custom", path: [key], message: "Invalid dimension ID" });
        return z.NEVER;
      }
    }
  }
  return value;
}

/** A world's dimensions: a map from dimension id to definition. */
export const worldDimensionsSchema = withZod("worldDimensionsSchema", () =>
  z.preprocess(boundedMapInput, z.record(dimensionIdSchema, worldDimensionDefinitionSchema)),
);

/** Where a settlement came from: `{resultId, turnNumber}`. */
export const dimensionSourceSchema = withZod("dimensionSourceSchema", () =>
  z.strictObject({ resultId: z.string().min(1), turnNumber: z.number().int().nonnegative() }),
);

/**
 * A stored dimension record `{definition, value, version, lastTrackedSource?}`; value and
 * initial value must fit the schema in session form (no locale maps), updateRule is a string.
 */
export const dimensionRecordSchema = withZod("dimensionRecordSchema", () =>
  z
    .strictObject({
      definition: worldDimensionDefinitionSchema,
      value: dimensionJsonSchema,
      version: z.number().int().positive(),
      lastTrackedSource: dimensionSourceSchema.optional(),
    })
    .superRefine((record, ctx) => {
      for (const [field, value] of [["value", record.value], ["definition.initialValue", record.definition.initialValue]]) {
        for (const issue of validateDimensionValue(record.definition.schema, value, { localized: "resolved" })) {
          ctx.addIssue({ code: "custom", path: [...field.split("."), ...issue.path], message: issue.message });
        }
      }
      if (record.definition.updateRule !== undefined && typeof record.definition.updateRule !== "string") {
        ctx.addIssue({ code: "custom", path: ["definition", "updateRule"], message: "Expected a string in the session language" });
      }
    }),
);

/** The public snapshot: id → `{name, description?, schema, value, version}` (no initial values or rules). */
export const dimensionSnapshotSchema = withZod("dimensionSnapshotSchema", () =>
  z.preprocess(
    boundedMapInput,
    z.record(
      dimensionIdSchema,
      z
        .strictObject({
          name: textSchema,
          description: textSchema.optional(),
          schema: dimensionValueSchema,
          value: dimensionJsonSchema,
          version: z.number().int().positive(),
        })
        .superRefine((entry, ctx) => {
          for (const issue of validateDimensionValue(entry.schema, entry.value, { localized: "resolved" })) {
            ctx.addIssue({ code: "custom", path: ["value", ...issue.path], message: issue.message });
          }
        }),
    ),
  ),
);

/** A settlement receipt: source, status, read versions, definitions, source turn, version, error?, blockedBy?. */
export const dimensionSettlementReceiptSchema = withZod("dimensionSettlementReceiptSchema", () =>
  z.strictObject({
    source: dimensionSourceSchema,
    status: z.enum(["pending-settlement", "settled", "no-change", "manual", "skipped"]),
    readVersions: z.record(dimensionIdSchema, z.number().int().positive()),
    definitions: worldDimensionsSchema,
    sourceTurnId: z.string().min(1),
    version: z.number().int().positive(),
    error: z.string().optional(),
    blockedBy: z.literal("extraction-failed").optional(),
  }),
);

/** The public part of a receipt: source, status, sourceTurnId, version, error. */
export const dimensionSettlementSummarySchema = withZod("dimensionSettlementSummarySchema", () =>
  dimensionSettlementReceiptSchema.pick({ source: true, status: true, sourceTurnId: true, version: true, error: true }),
);

// ============================================================================================
// Snapshots and locales
// ============================================================================================

/** The public snapshot of stored records: id → `{name, description?, schema, value (copied), version}`. */
export function dimensionSnapshotFromRecords(records) {
  const out = {};
  for (const [id, { definition, value, version }] of Object.entries(records ?? {})) {
    setOwn(out, id, {
      name: definition.name,
      ...(definition.description !== undefined ? { description: definition.description } : {}),
      schema: definition.schema,
      value: copyJson(value),
      version,
    });
  }
  return out;
}

/** Studio: dimensionSnapshotFromRecords that skips rows without a definition. */
export function materializeDimensionSnapshot(records) {
  const usable = {};
  for (const [id, record] of Object.entries(records ?? {})) if (record && record.definition) setOwn(usable, id, record);
  return dimensionSnapshotFromRecords(usable);
}

function localizeValue(schema, value, locale) {
  if (!isObject(schema)) return value;
  if (schema["x-i18n"]) return resolveI18nText(value, locale) ?? value;
  if (Array.isArray(value)) return value.map((item) => (schema.items ? localizeValue(schema.items, item, locale) : item));
  if (isObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => {
        const child =
          schema.properties && hasOwn(schema.properties, key)
            ? schema.properties[key]
            : isObject(schema.additionalProperties)
              ? schema.additionalProperties
              : undefined;
        return [key, child ? localizeValue(child, item, locale) : item];
      }),
    );
  }
  return value;
}

/**
 * A definition for one content locale: its initial value's `x-i18n` texts and its update rule
 * become strings; name and description (UI labels) keep their locale maps.
 */
export function resolveDimensionDefinitionLocale(definition, locale) {
  const { updateRule, ...rest } = definition;
  const rule = updateRule === undefined ? undefined : resolveI18nText(updateRule, locale) ?? "";
  return {
    ...rest,
    initialValue: localizeValue(definition.schema, definition.initialValue, locale),
    ...(rule === undefined ? {} : { updateRule: rule }),
  };
}

/** Every definition of a world, resolved for one content locale. */
export function resolveWorldDimensionsLocale(definitions, locale) {
  const out = {};
  for (const [id, definition] of Object.entries(definitions ?? {})) setOwn(out, id, resolveDimensionDefinitionLocale(definition, locale));
  return out;
}

// ============================================================================================
// Proposals
// ============================================================================================

/** Payload of `dimension.initialize`: `{definitions}`. */
export const dimensionInitializePayloadSchema = withZod("dimensionInitializePayloadSchema", () =>
  z.strictObject({ definitions: worldDimensionsSchema }),
);

/** Payload of `dimension.update`: updates with expected versions, and an optional settlement (source, read versions). */
export const dimensionUpdatePayloadSchema = withZod("dimensionUpdatePayloadSchema", () =>
  z
    .strictObject({
      updates: z
        .array(
          z.strictObject({
            id: dimensionIdSchema,
            expectedVersion: z.number().int().positive(),
            value: dimensionJsonSchema,
            reason: z.string().max(2000).optional(),
          }),
        )
        .max(DIMENSION_MAX_UPDATES)
        .refine((updates) => new Set(updates.map((u) => u.id)).size === updates.length, { message: "Duplicate dimension update ID" }),
      source: dimensionSourceSchema.optional(),
      readVersions: z.record(dimensionIdSchema, z.number().int().positive()).optional(),
      settlement: z.enum(["no-change", "manual", "skipped"]).optional(),
    })
    .superRefine((payload, ctx) => {
      if (payload.source && !payload.readVersions) {
        ctx.addIssue({ code: "custom", path: ["readVersions"], message: "Settlement requires read versions" });
      }
      if (payload.updates.length === 0 && !(payload.source && payload.settlement)) {
        ctx.addIssue({ code: "custom", path: ["updates"], message: "Empty updates require an explicit settlement" });
      }
      if (payload.settlement && !payload.source) {
        ctx.addIssue({ code: "custom", path: ["source"], message: "Settlement requires a source" });
      }
      if ((payload.settlement === "no-change" || payload.settlement === "skipped") && payload.updates.length > 0) {
        ctx.addIssue({ code: "custom", path: ["updates"], message: "No-change/skip cannot change values" });
      }
    }),
);

/** A dimension write that conflicts with the stored version or definition. */
export class DimensionConflictError extends Error {
  constructor(message) {
    super(message);
    this.name = "DimensionConflictError";
  }
}

/** A dimension write that is invalid (unknown dimension, value against the schema). */
export class DimensionValidationError extends Error {
  constructor(message) {
    super(message);
    this.name = "DimensionValidationError";
  }
}

/** Deep equality of two JSON values (key order ignored). */
export function dimensionsJsonEqual(left, right) {
  if (Object.is(left, right)) return true;
  if (!left || !right || typeof left !== "object" || typeof right !== "object" || Array.isArray(left) !== Array.isArray(right)) return false;
  const a = Object.keys(left);
  const b = Object.keys(right);
  return a.length === b.length && a.every((key) => hasOwn(right, key) && dimensionsJsonEqual(left[key], right[key]));
}

/**
 * The records after a `dimension.initialize` or `dimension.update` proposal (the input is not
 * changed). Initialize adds new dimensions at version 1 (definitions resolved for `locale`);
 * update checks read and expected versions and the schema, and bumps a version only when the
 * value changes. Throws DimensionConflictError or DimensionValidationError.
 */
export function materializeDimensionRecords(base, proposal, locale) {
  const records = copyJson(base ?? {});
  if (proposal.type === "dimension.initialize") {
    const definitions = resolveWorldDimensionsLocale(dimensionInitializePayloadSchema.parse(proposal.payload).definitions, locale);
    for (const [id, definition] of Object.entries(definitions)) {
      const existing = ownValue(records, id);
      if (existing && !dimensionsJsonEqual(existing.definition, definition)) throw new DimensionConflictError(`Dimension definition changed: ${id}`);
      if (!existing) setOwn(records, id, { definition, value: copyJson(definition.initialValue), version: 1 });
    }
    return records;
  }
  const payload = dimensionUpdatePayloadSchema.parse(proposal.payload);
  for (const [id, version] of Object.entries(payload.readVersions ?? {})) {
    if (ownValue(records, id)?.version !== version) throw new DimensionConflictError(`Dimension read version conflict: ${id}`);
  }
  for (const update of payload.updates) {
    const existing = ownValue(records, update.id);
    if (!existing) throw new DimensionValidationError(`Unknown dimension: ${update.id}`);
    if (existing.version !== update.expectedVersion) throw new DimensionConflictError(`Dimension version conflict: ${update.id}`);
    if (payload.source && existing.lastTrackedSource && payload.source.turnNumber < existing.lastTrackedSource.turnNumber) {
      throw new DimensionConflictError(`Stale dimension source: ${update.id}`);
    }
    const issues = validateDimensionValue(existing.definition.schema, update.value, { localized: "resolved" });
    if (issues.length) {
      throw new DimensionValidationError(`Invalid dimension ${update.id}: ${issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
    }
    setOwn(records, update.id, dimensionRecordSchema.parse({
      ...existing,
      value: copyJson(update.value),
      version: existing.version + (dimensionsJsonEqual(existing.value, update.value) ? 0 : 1),
      ...(payload.source ? { lastTrackedSource: payload.source } : {}),
    }));
  }
  return records;
}

// ============================================================================================
// Queries
// ============================================================================================

/** Input of a dimension query: 1–20 `{dimension, path?, offset?, limit?}`. */
export const dimensionQuerySchema = withZod("dimensionQuerySchema", () =>
  z.strictObject({
    queries: z
      .array(
        z.strictObject({
          dimension: dimensionIdSchema,
          path: z.string().min(1).max(1024).optional(),
          offset: z.number().int().min(0).optional(),
          limit: z.number().int().min(1).max(2000).optional(),
        }),
      )
      .min(1)
      .max(20),
  }),
);

/** Reads a JSON Pointer (`/a/0`) or dotted path (`a.b[0]`) inside a value. */
function pickPath(value, path) {
  if (path.startsWith("/")) {
    if (/~(?![01])/u.test(path)) return { found: false, error: "Invalid JSON Pointer" };
    let current = value;
    for (const token of path.slice(1).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))) {
      if (!current || typeof current !== "object" || !hasOwn(current, token)) return { found: false };
      current = current[token];
    }
    return { found: true, value: current };
  }
  const tokens = [];
  const matcher = /(?:^|\.)([^.[\]]+)|\[(\d+)\]/g;
  let end = 0;
  for (let m = matcher.exec(path); m; m = matcher.exec(path)) {
    if (m.index !== end) return { found: false, error: "Invalid path syntax" };
    tokens.push(m[1] ?? Number(m[2]));
    end = m.index + m[0].length;
  }
  if (end !== path.length || !tokens.length) return { found: false, error: "Invalid path syntax" };
  let current = value;
  for (const token of tokens) {
    if (!current || typeof current !== "object" || (typeof token === "number" && !Array.isArray(current)) || !hasOwn(current, token)) {
      return { found: false };
    }
    current = current[token];
  }
  return { found: true, value: current };
}

/**
 * Answers dimension queries against a snapshot: `{success: true, results, _text}` where each
 * result has the query, `found`, `value` (or a `page` for offset/limit), the localized name,
 * schema and version; `_text` is the model's view within a fixed budget.
 */
export function queryDimensionSnapshot(snapshot, input, locale) {
  const parsed = dimensionQuerySchema.parse(input);
  const dimensions = dimensionSnapshotSchema.parse(snapshot);
  const results = parsed.queries.map((query) => {
    const entry = dimensions[query.dimension];
    if (!entry) return { ...query, found: false, value: null, error: "Unknown dimension" };
    const picked = query.path ? pickPath(entry.value, query.path) : { found: true, value: entry.value };
    let page;
    if (picked.found && (query.offset !== undefined || query.limit !== undefined)) {
      const offset = query.offset ?? 0;
      const limit = query.limit ?? 100;
      const v = picked.value;
      const collection = typeof v === "string" ? Array.from(v) : Array.isArray(v) ? v : v && typeof v === "object" ? Object.entries(v) : undefined;
      if (collection) {
        const slice = collection.slice(offset, offset + limit);
        page = {
          value: typeof v === "string" ? slice.join("") : Array.isArray(v) ? slice : Object.fromEntries(slice),
          total: collection.length,
          ...(offset + limit < collection.length ? { nextOffset: offset + limit } : {}),
        };
      }
    }
    return { ...query, ...picked, ...(page ? { page } : {}), name: resolveI18nText(entry.name, locale), schema: entry.schema, version: entry.version };
  });
  const text = results
    .map((result) => {
      const label = `${result.dimension}${result.path ? `.${result.path}` : ""}`;
      if (!result.found) return `${label}: not found`;
      const json = JSON.stringify(result.page ? result.page : result.value);
      const budget = result.page ? Math.floor(7600 / parsed.queries.length) : 320;
      const shown = json.length > budget ? `${json.slice(0, budget)}… [truncated; query a narrower path or smaller offset/limit page]` : json;
      return `${label} (v${result.version}) = ${shown}`;
    })
    .join("\n");
  return { success: true, results, _text: text.slice(0, 8192) };
}

const CUT_VALUE_LENGTH = 240;

/**
 * The model's view of the current dimensions, one `id (name, vN): value` line each, within
 * `maxChars` (default 12000): the longest values are cut to 240 characters first, then whole
 * dimensions are left out with a note. Current values only.
 */
export function projectDimensionSnapshot(snapshot, locale, maxChars = 12000) {
  const entries = Object.entries(snapshot ?? {}).map(([id, entry]) => ({
    head: `${id} (${resolveI18nText(entry.name, locale)}, v${entry.version}): `,
    value: JSON.stringify(entry.value),
    cut: false,
  }));
  const shown = (entry) => (entry.cut ? `${entry.value.slice(0, CUT_VALUE_LENGTH)}…` : entry.value);
  const budget = maxChars - 100;
  let total = entries.reduce((sum, e) => sum + e.head.length + e.value.length + 1, 0);
  for (const entry of [...entries].sort((a, b) => b.value.length - a.value.length)) {
    if (total <= budget || entry.value.length <= CUT_VALUE_LENGTH) break;
    total -= entry.value.length - (CUT_VALUE_LENGTH + 1);
    entry.cut = true;
  }
  let text = "";
  let omitted = 0;
  for (const entry of entries) {
    const line = `${entry.head}${shown(entry)}\n`;
    if (text.length + line.length > budget) {
      omitted++;
      continue;
    }
    text += line;
  }
  if (omitted) {
    text += instructionLocaleFor(locale) === "zh" ? `[有 ${omitted} 个维度未列出；需要详情时按 ID 查询。]` : `[${omitted} dimensions omitted; query by ID for details.]`;
  }
  return text;
}
