export default function (covel) {
  covel.provideExtension("prompt.segment@1", "glossary", {
    handler: async (_input, ctx) => {
      const entries = await ctx.pluginData.list("entries");
      if (entries.length === 0) return [];
      const lines = entries.map(({ value }) => `- ${value.term}: ${value.meaning}`);
      return [
        {
          id: "glossary",
          content: `<glossary>\n${lines.join("\n")}\n</glossary>`,
          position: "pre-history",
          role: "system",
          audience: "story",
          volatility: "stable",
        },
      ];
    },
  });

  covel.provideExtension("prompt.segment@1", "example", {
    handler: () => [
      { id: "example-question", content: "(Example) What do I see?", position: "pre-history", role: "user", audience: "story", volatility: "stable", order: 0 },
      { id: "example-answer", content: "(Example) Salt-white stones, and the bell tower leaning out of the water.", position: "pre-history", role: "assistant", audience: "story", volatility: "stable", order: 1 },
    ],
  });

  covel.provideExtension("prompt.segment@1", "discoveries", {
    handler: async (_input, ctx) => {
      const found = (await ctx.pluginData.get("entries", "latest")) ?? null;
      const out = [
        { id: "remember", content: "Remember: the bell still rings at low tide.", position: { depth: 2 }, role: "user", audience: "story", volatility: "session" },
      ];
      if (found) {
        out.push({ id: "latest", content: `Most recent discovery: ${found.term}.`, position: "pre-history", audience: "story", volatility: "turn" });
      }
      return out;
    },
  });
}
