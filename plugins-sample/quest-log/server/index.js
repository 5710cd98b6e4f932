import { appendSummaryEntries, labelText } from "@covel/plugin-handlers-utils";

export default function (covel) {
  const { z, tool } = covel.toolkit;
  covel.registerTool(
    tool({
      name: "quest-update",
      description: "Record progress on a quest by its name.",
      parameters: z.object({ name: z.string().min(1), status: z.enum(["active", "completed", "failed"]) }),
      execute: async ({ name, status }) => ({ _text: `${name}: ${status}` }),
    }),
  );
  covel.on("TurnStop", async () => undefined);

  covel.provideExtension("ui.slot@1", "summary", {
    handler: async ({ previous }, ctx) => {
      const quests = (await ctx.pluginData.list("quests")).map((row) => row.value);
      if (quests.length === 0) return previous;
      const active = quests.filter((q) => q.status === "active").map((q) => q.name);
      const done = quests.filter((q) => q.status === "completed").length;
      return appendSummaryEntries(previous, [
        { id: "quests.active", label: labelText(ctx, "Quests"), kind: "list", items: active.slice(0, 24), total: active.length },
        { id: "quests.done", label: labelText(ctx, "Completed"), kind: "meter", value: done, max: quests.length, tone: "success" },
      ]);
    },
  });
}
