export default function (covel) {
  covel.provideExtension("ui.slot@1", "choices", {
    handler: async ({ events }, ctx) => {
      const offered = [...events].reverse().find((e) => e.topic === "choices.offer")?.data;
      const message = offered ?? (await ctx.pluginData.get("message", "current"));
      if (!message || !Array.isArray(message.choices) || message.choices.length === 0) return null;
      return {
        ...(ctx.turnId ? { turnId: ctx.turnId } : {}),
        ...(message.recap ? { recap: message.recap } : {}),
        ...(message.decision ? { decision: message.decision } : {}),
        choices: message.choices.slice(0, 4).map((text, index) => ({ id: `choice-${index + 1}`, text })),
      };
    },
  });
}
