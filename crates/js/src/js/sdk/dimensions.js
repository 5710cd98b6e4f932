// @covel/plugin-handlers-utils/dimensions — dimension value schemas and snapshots.
export const DIMENSION_CONTRACT = "world.dimensions@1";
export const DIMENSIONS_NAMESPACE = "_dimensions";
export const DIMENSION_SETTLEMENTS_NAMESPACE = "_dimension-settlements";
export const DIMENSION_LIMITS = Object.freeze({ maxDepth: 32, maxNodes: 10000, maxBytes: 262144, maxUpdates: 64 });
const ID = /^[a-z][a-zA-Z0-9_-]{0,63}$/;
const FORBIDDEN = new Set(["__proto__", "prototype", "constructor"]);

export function isDimensionId(id) {
  return typeof id === "string" && ID.test(id) && !FORBIDDEN.has(id);
}

function typeOf(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Problems of `value` against a dimension value schema (closed vocabulary, no coercion). */
export function validateDimensionValue(schema, value, path = "") {
  const problems = [];
  if (!schema || typeof schema !== "object") return problems;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const t = typeOf(value);
    if (!types.includes(t) && !(t === "integer" && types.includes("number"))) problems.push(`${path || "/"} must be ${types.join(" or ")}`);
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) problems.push(`${path || "/"} is not an allowed value`);
  if (schema.const !== undefined && JSON.stringify(schema.const) !== JSON.stringify(value)) problems.push(`${path || "/"} must equal ${JSON.stringify(schema.const)}`);
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${path || "/"} is below ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${path || "/"} is above ${schema.maximum}`);
  }
  if (typeof value === "string") {
    const len = [...value].length;
    if (schema.minLength !== undefined && len < schema.minLength) problems.push(`${path || "/"} is shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && len > schema.maxLength) problems.push(`${path || "/"} is longer than ${schema.maxLength}`);
  }
  if (Array.isArray(value) && schema.items) value.forEach((v, i) => problems.push(...validateDimensionValue(schema.items, v, `${path}/${i}`)));
  if (typeOf(value) === "object") {
    for (const key of schema.required || []) if (!(key in value)) problems.push(`${path}/${key} is required`);
    for (const [key, v] of Object.entries(value)) {
      if (schema.properties && schema.properties[key]) problems.push(...validateDimensionValue(schema.properties[key], v, `${path}/${key}`));
      else if (schema.additionalProperties === false) problems.push(`${path}/${key} is not allowed`);
    }
  }
  return problems;
}

/** The public snapshot `{id: {name, description?, schema, value, version}}` from stored records. */
export function materializeDimensionSnapshot(records) {
  const out = {};
  for (const [id, record] of Object.entries(records || {})) {
    if (!record || !record.definition) continue;
    const entry = { name: record.definition.name, schema: record.definition.schema, value: record.value, version: record.version };
    if (record.definition.description !== undefined) entry.description = record.definition.description;
    out[id] = entry;
  }
  return out;
}
