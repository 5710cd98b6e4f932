async function tracks(ctx) {
  return (await ctx.pluginData.get("tracks", "registry")) ?? null;
}

export default function (covel) {
  covel.provideExtension("ui.slot@1", "music", {
    handler: async ({ previous, events }, ctx) => {
      const registry = await tracks(ctx);
      if (!registry) return previous;
      const cue = [...events].reverse().find((e) => e.topic === "music.cue")?.data;
      const mood = cue?.mood ?? (await ctx.pluginData.get("state", "mood")) ?? "calm";
      const track = registry.find((t) => t.mood === mood);
      if (!track || !track.ref) return {};
      return { trackId: track.id, title: track.title, ref: track.ref, loop: true, volume: track.volume ?? 0.6 };
    },
  });

  covel.provideExtension("prompt.segment@1", "music-moods", {
    handler: async (_input, ctx) => {
      const registry = await tracks(ctx);
      if (!registry) return [];
      const moods = [...new Set(registry.map((t) => t.mood))];
      return [{
        id: "music-moods",
        content: `<music-moods>${moods.join(", ")}</music-moods>\nWhen the mood of the scene changes to one of these, emit music.cue with it.`,
        position: "system",
        audience: "story",
        volatility: "session",
      }];
    },
  });
}
