const POSITIONS = ["left", "center-left", "center", "center-right", "right"];

export default function (covel) {
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
