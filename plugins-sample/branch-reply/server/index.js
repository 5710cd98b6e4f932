export default function (covel) {
  covel.provideExtension("prompt.history-transform@1", "accepted-branch", {
    handler: async ({ messages }, ctx) => {
      const adopted = new Map();
      for (const row of await ctx.pluginData.list("turns")) {
        adopted.set(row.value.turnId, row.value.text);
      }
      if (adopted.size === 0) return { messages };
      // The latest assistant message of an adopted turn is the one the player replaced.
      const lastAssistant = new Map();
      messages.forEach((m, index) => {
        if (m.role === "assistant") lastAssistant.set(m.turnId, index);
      });
      return {
        messages: messages.map((m, index) =>
          adopted.has(m.turnId) && lastAssistant.get(m.turnId) === index
            ? { ...m, content: adopted.get(m.turnId), metadata: { ...(m.metadata ?? {}), branchAdopted: true } }
            : m,
        ),
      };
    },
  });
}
