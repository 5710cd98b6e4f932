const POSITIONS = ["left", "center-left", "center", "center-right", "right"];

import { makeProposal, withPendingProposals } from "@covel/plugin-handlers-utils";

export default function (covel) {
  const { tool, z } = covel.toolkit;
  covel.registerTool(
    tool({
      name: "set-scene",
      description: "Move the story to another scene: its place, the time of day and who is there.",
      parameters: z.object({
        sceneId: z.string().min(1).describe("A short id for the place, e.g. harbour"),
        name: z.string().min(1).describe("The place's name as the player sees it"),
        night: z.boolean().optional().describe("Whether it is night"),
        cast: z.array(z.string()).max(5).optional().describe("Ids of the characters on stage, the speaker first"),
      }),
      execute: async (scene, ctx) => {
        const now = new Date(0).toISOString();
        const items = [{ namespace: "stage", key: "current", value: { sceneId: scene.sceneId, name: scene.name, night: scene.night ?? false } }];
        if (scene.cast) {
          items.push({ namespace: "active-cast", key: "current", value: scene.cast });
          items.push({ namespace: "direction", key: "current", value: { speaker: scene.cast[0] ?? null } });
        }
        return withPendingProposals(
          { _text: `The scene is now ${scene.name}.` },
          [makeProposal(ctx, now, "plugin.data.batch", { items })],
        );
      },
    }),
  );

  covel.provideExtension("ui.slot@1", "backdrop", {
    handler: async ({ events }, ctx) => {
      const stage = (await ctx.pluginData.get("stage", "current")) ?? {};
      const preview = [...events].reverse().find((e) => e.topic === "scene.set");
      const scene = { ...stage, ...(preview ? preview.data : {}) };
      if (!scene.sceneId) return null;
      return {
        sceneId: scene.sceneId,
        name: scene.name ?? scene.sceneId,
        variant: scene.night ? "night" : "day",
        ...(scene.image ? { ref: scene.image } : {}),
      };
    },
  });

  covel.provideExtension("ui.slot@1", "cast", {
    handler: async (_input, ctx) => {
      const present = (await ctx.pluginData.get("active-cast", "current")) ?? [];
      const byId = new Map(ctx.world.characters.map((c) => [c.id, c]));
      const actors = present
        .filter((id) => byId.has(id))
        .map((id, index) => ({
          characterId: id,
          displayName: byId.get(id).name,
          type: byId.get(id).type,
          position: POSITIONS[Math.min(index * 2, POSITIONS.length - 1)],
          active: index === 0,
        }));
      return { actors, retainWhenEmpty: true };
    },
  });

  covel.provideExtension("ui.slot@1", "direction", {
    handler: async ({ previous, events }, ctx) => {
      const committed = (await ctx.pluginData.get("direction", "current")) ?? null;
      const cue = [...events].reverse().find((e) => e.topic === "stage.direction")?.data ?? committed;
      if (!previous || !cue) return previous;
      return {
        ...previous,
        actors: previous.actors.map((actor) => ({
          ...actor,
          active: cue.speaker ? actor.characterId === cue.speaker : actor.active,
          exiting: (cue.exiting ?? []).includes(actor.characterId) || undefined,
        })),
      };
    },
  });
}
