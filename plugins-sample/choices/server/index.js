import { makeProposal, withPendingProposals } from "@covel/plugin-handlers-utils";

export default function (covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(
    tool({
      name: "offer-choices",
      description: "End the narration on a decision: a one-line recap, the question and two to four choices.",
      parameters: z.object({
        recap: z.string().min(1).max(200),
        decision: z.string().min(1).max(200),
        choices: z.array(z.string().min(1).max(80)).min(2).max(4),
      }),
      execute: async (offer, ctx) =>
        withPendingProposals({ _text: `Offered ${offer.choices.length} choices.` }, [
          makeProposal(ctx, new Date(0).toISOString(), "plugin.data", { namespace: "message", key: "current", value: offer }),
        ]),
    }),
  );

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
