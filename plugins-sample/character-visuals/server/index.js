export default function (covel) {
  covel.provideExtension("ui.slot@1", "visuals", {
    handler: async (_input, ctx) => {
      const portraits = new Map((await ctx.pluginData.list("portraits")).map((row) => [row.key, row.value]));
      const characters = ctx.world.characters
        .filter((c) => portraits.has(c.id))
        .map((c) => {
          const p = portraits.get(c.id);
          return {
            characterId: c.id,
            displayName: c.name,
            avatar: p.avatar,
            sprite: p.sprite,
            visuals: {
              defaultVariant: "neutral",
              variants: Object.entries(p.expressions ?? {}).map(([expression, sprite]) => ({ id: expression, expression, sprite })),
            },
          };
        });
      return { characters };
    },
  });
}
