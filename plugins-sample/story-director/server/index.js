import { estimateTokens } from "@covel/plugin-handlers-utils";
import { quote, toneLine } from "./lib/text.js";

export default function (covel) {
  covel.provideExtension("prompt.segment@1", "house-style", {
    handler: () => [
      {
        id: "house-style",
        content: "Write in the second person, present tense. Prefer concrete detail to summary.",
        position: "system",
        audience: "story",
        volatility: "stable",
      },
    ],
  });

  covel.provideExtension("prompt.segment@1", "tone", {
    handler: (_input, ctx) => {
      const { tone } = ctx.getOwnSettings();
      // What a handler logs is shown with its call in the trace (the Providers panel).
      console.log(`tone setting: ${tone}`);
      return [
        {
          id: "tone",
          content: toneLine(tone),
          position: "system",
          audience: "story",
          volatility: "session",
          order: 10,
        },
      ];
    },
  });

  covel.provideExtension("prompt.segment@1", "focus", {
    handler: (input) => {
      const message = input.playerMessage.trim();
      if (!message) return [];
      // Long player messages are summarised by their opening so the focus line stays small.
      const focus = estimateTokens(message) > 60 ? message.slice(0, 200) + "…" : message;
      return [
        {
          id: "focus",
          content: `This turn, the player wants: ${quote(focus)}`,
          position: "system",
          audience: "story",
          volatility: "turn",
        },
      ];
    },
  });
}
