// Phrases that decide or feel for the player's character: the player does that.
const SPEAKS_FOR_THE_PLAYER = [/\byou decide\b/i, /\byou feel\b/i, /\byou realize\b/i];

export default function (covel) {
  covel.on("PostLLMResponse", async (_ctx, { response }) => {
    if (response.toolCalls.length > 0 || typeof response.content !== "string") return;
    const found = SPEAKS_FOR_THE_PLAYER.find((phrase) => phrase.test(response.content));
    if (!found) return;
    return {
      action: "continue",
      replace: {
        correction: `Do not decide or feel for the player ("${response.content.match(found)[0]}"): describe what they perceive and let them choose.`,
      },
    };
  });
}
