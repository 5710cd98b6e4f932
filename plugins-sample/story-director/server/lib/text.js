// Small text helpers shared by the story director's providers.

const TONES = {
  wry: "Keep a wry, lightly ironic narrative voice.",
  grave: "Keep a grave, unhurried narrative voice.",
};

export function toneLine(tone) {
  return TONES[tone] ?? TONES.wry;
}

export function quote(text) {
  return `“${String(text).replace(/\s+/g, " ")}”`;
}
