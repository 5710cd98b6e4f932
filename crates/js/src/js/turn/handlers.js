// The turn loop's side of a plugin runtime: the wrappers the host calls a plugin's tools, hooks
// and form validators through, and what the model is offered of a tool. The bootstrap loads
// this module on a plugin's first `registerTool`, `on` or `registerFormValidator`, so a plugin
// that registers none pays nothing. `host` lends what the bootstrap took before plugin code
// ran: zod and the SDK (loaded on first use) and a deep copy.
export function makeTurnHandlers(host) {
  // A tool's input is checked against its zod schema before `execute` runs, as upstream's tool
  // host does; a refused input is answered with this marker (the host reports the issues).
  const INVALID_INPUT = "covel.invalid-tool-input";
  const isZod = (schema) => schema !== null && typeof schema === "object" && "_zod" in schema;
  const nameOf = (value) => (value && typeof value === "object" && typeof value.name === "string" ? value.name : "<unnamed>");

  // A tool's `ctx.store`: its plugin's data as the turn has it so far, the committed rows with
  // the writes the plugin proposed earlier in this turn laid over them (the SDK's overlays).
  function storeFor(ctx) {
    const reader = ctx.pluginData;
    const pending = ctx.pendingProposals;
    return Object.freeze({
      async getPluginData(namespace, key) {
        const over = host.sdk().overlayPluginDataValue(pending, ctx.pluginId, `${namespace}`, `${key}`);
        return over.hit ? over.value : reader.get(namespace, key);
      },
      async listPluginData(namespace) {
        const rows = await reader.list(namespace);
        const over = host.sdk().overlayPluginDataRows(pending, ctx.pluginId, `${namespace}`);
        const out = [];
        for (const row of rows) {
          const written = over.get(JSON.stringify([`${namespace}`, row.key]));
          if (!written) out.push(row);
          else if (!written.deleted) out.push({ ...row, value: written.value });
        }
        over.forEach((written) => {
          if (!written.deleted && !rows.some((r) => r.key === written.key)) out.push({ key: written.key, value: written.value, createdAt: null, updatedAt: null });
        });
        return out;
      },
    });
  }

  return Object.freeze({
    // The host passes `{params, pendingProposals, emittedEventTopics, turnNumber}`.
    tool(tool) {
      const execute = tool && tool.execute;
      const schema = tool && tool.parameters;
      return async (input, ctx) => {
        if (typeof execute !== "function") throw new Error(`tool ${nameOf(tool)} has no execute function`);
        ctx.pendingProposals = input.pendingProposals || [];
        ctx.emittedEventTopics = input.emittedEventTopics || [];
        ctx.turnNumber = input.turnNumber;
        ctx.logicalTurn = input.turnNumber;
        ctx.store = storeFor(ctx);
        let params = input.params;
        if (isZod(schema)) {
          const checked = schema.safeParse(params);
          if (!checked.success) {
            const issues = checked.error.issues.map((i) => ({ path: (i.path || []).map((p) => `${String(p)}`), message: `${i.message}` }));
            return { kind: INVALID_INPUT, issues };
          }
          params = checked.data;
        }
        const result = await execute(params, ctx);
        return result === undefined ? null : result;
      };
    },
    // A hook handler is called `(ctx, payload)`; the host passes `{event, payload,
    // activePluginIds}`. Nothing returned means continue (answered as null); a `match` that
    // says no is answered `{action: "continue", skipped: true}`.
    hook(handler, match) {
      return async (input, ctx) => {
        ctx.event = input.event;
        ctx.activePluginIds = new Set(input.activePluginIds || []);
        if (typeof match === "function" && !match(host.deepCopy(input.payload))) return { action: "continue", skipped: true };
        const result = await handler(ctx, input.payload);
        return result === undefined ? null : result;
      };
    },
    // Called `(values, data, ctx)`; the host passes `{values, data}`. Nothing returned is
    // "valid" (answered as null).
    formValidator(validator) {
      return (input, ctx) => {
        const verdict = validator(input.values, input.data, ctx);
        return verdict === undefined ? null : verdict;
      };
    },
    // What the model is offered: the input side of the zod schema as JSON Schema, without
    // `$schema` (as upstream's tool() does).
    spec(tool, name) {
      let parameters = tool && tool.parameterSchema;
      if (parameters === undefined && tool) {
        try {
          parameters = isZod(tool.parameters) ? host.zod().z.toJSONSchema(tool.parameters, { io: "input", unrepresentable: "any" }) : tool.parameters;
        } catch {
          parameters = null;
        }
      }
      if (parameters && typeof parameters === "object" && "$schema" in parameters) {
        parameters = { ...parameters };
        delete parameters.$schema;
      }
      return { name, description: tool && typeof tool.description === "string" ? tool.description : "", parameters: parameters ?? null };
    },
  });
}
