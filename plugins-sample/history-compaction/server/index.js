import { estimateTokens } from "@covel/plugin-handlers-utils";

const PROTECT_USER_TURNS = 2;
const PROTECT_MESSAGES = 5;
const GROWTH = 0.25;
const MERGE_RATIO = 0.75;
const FLOOR = 128;
const DEFAULT_SECTIONS = ["Key events", "Character relationships", "World state"];
const MARKER = "[Summary truncated to context budget]";

/** Index from which messages are protected: the last two user turns and the last five messages. */
function protectStart(messages) {
  const tail = Math.max(0, messages.length - PROTECT_MESSAGES);
  let users = 0;
  let boundary = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user" && ++users === PROTECT_USER_TURNS) {
      boundary = i;
      break;
    }
  }
  return Math.min(tail, boundary);
}

function candidatesOf(messages) {
  let lastTagged = -1;
  messages.forEach((m, i) => {
    if (m.compactedAtTurnId) lastTagged = i;
  });
  return messages.slice(lastTagged + 1, protectStart(messages));
}

function systemPrompt(sections) {
  return [
    "You keep the memory of an interactive story. Summarise only what the text says; never invent events.",
    "Focus on:",
    ...sections.map((s) => `- ${s}`),
  ].join("\n");
}

function freshPrompt(messages, maxTokens) {
  const rendered = messages.filter((m) => m.content.trim()).map((m) => `[${m.role}]: ${m.content}`);
  return `Summarise the following turns in about ${maxTokens} tokens.\n\n${rendered.join("\n\n")}`;
}

function mergePrompt(summaries, maxTokens) {
  const joined = summaries.map((s) => s.content).join("\n\n---\n\n");
  return `Merge only these consecutive earlier summaries, oldest first, into one of about ${maxTokens} tokens.\n\n<selected_history_summaries>\n${joined}\n</selected_history_summaries>`;
}

/** Cuts a summary to a token budget, marking the cut. */
function bound(text, maxTokens) {
  const trimmed = String(text).trim();
  if (estimateTokens(trimmed) <= maxTokens) return { text: trimmed, truncated: false };
  if (estimateTokens(MARKER) > maxTokens) return { text: trimmed.slice(0, Math.max(1, maxTokens)), truncated: true };
  let low = 0;
  let high = trimmed.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (estimateTokens(`${trimmed.slice(0, mid).trimEnd()} ${MARKER}`) <= maxTokens) low = mid;
    else high = mid - 1;
  }
  return { text: `${trimmed.slice(0, low).trimEnd()} ${MARKER}`, truncated: true };
}

async function summarize(ctx, system, prompt, budget, inputWindow) {
  if (estimateTokens(system) + estimateTokens(prompt) > inputWindow) {
    throw new Error("the summary request does not fit the fast model's input window");
  }
  const answer = await ctx.gateway.generateText({ preset: "fast", system, prompt, maxOutputTokens: budget });
  if (answer.finishReason === "length") throw new Error("the fast model stopped at its length limit; the summary was discarded");
  if (!answer.text || !answer.text.trim()) throw new Error("the fast model returned an empty summary");
  const bounded = bound(answer.text, budget);
  if (!bounded.text.trim() || estimateTokens(bounded.text) > budget) throw new Error("the summary does not fit its budget");
  return bounded;
}

export default function (covel) {
  covel.provideExtension("history.compact@2", "segmented-summary", {
    handler: async (input, ctx) => {
      if (!ctx.gateway) throw new Error("no model gateway: compaction needs the session's fast model");
      const { messages, existingSummaries: existing, inputWindow, summaryBudget: budget } = input;
      const candidates = candidatesOf(messages);
      if (candidates.length === 0) return null;

      const sections = DEFAULT_SECTIONS;
      const system = systemPrompt(sections);
      // The longest prefix of the candidates that fits the fast model; messages are never cut.
      let low = 0;
      let high = candidates.length;
      while (low < high) {
        const mid = Math.ceil((low + high) / 2);
        const fits = estimateTokens(system) + estimateTokens(freshPrompt(candidates.slice(0, mid), budget.maxSegmentTokens)) <= inputWindow;
        if (fits) low = mid;
        else high = mid - 1;
      }
      if (low === 0) throw new Error("the oldest message does not fit the fast model's input window");
      const chosen = candidates.slice(0, low);

      const sourceTokens = chosen.reduce((n, m) => n + estimateTokens(m.content), 0);
      let freshBudget = Math.min(budget.maxSegmentTokens, Math.max(FLOOR, Math.ceil(sourceTokens * GROWTH)));
      const fresh = await summarize(ctx, system, freshPrompt(chosen, freshBudget), freshBudget, inputWindow);

      const totalExisting = existing.reduce((n, s) => n + estimateTokens(s.content), 0);
      let freshTokens = estimateTokens(fresh.text);
      if (existing.length > 0 && totalExisting + freshTokens > budget.maxTokens) {
        freshBudget = Math.min(freshBudget, Math.floor(budget.maxTokens / 2));
        if (freshBudget < 1) throw new Error("no room for a new summary in the budget");
        const rebound = bound(fresh.text, freshBudget);
        if (estimateTokens(rebound.text) > freshBudget) throw new Error("the new summary does not fit half the budget");
        fresh.text = rebound.text;
        fresh.truncated = fresh.truncated || rebound.truncated;
        freshTokens = estimateTokens(fresh.text);
      }

      // Merge the oldest segments only while the count or the total is over the limit.
      let mergeCount = 0;
      let retained = totalExisting;
      let mergeBudget = 0;
      while (
        mergeCount < existing.length &&
        (existing.length - mergeCount + 1 + (mergeCount > 0 ? 1 : 0) > budget.maxSegments ||
          retained + freshTokens + mergeBudget > budget.maxTokens)
      ) {
        retained -= estimateTokens(existing[mergeCount].content);
        mergeCount += 1;
        const selected = totalExisting - retained;
        mergeBudget = Math.min(budget.maxSegmentTokens, Math.max(1, budget.maxTokens - freshTokens - retained), Math.max(1, Math.ceil(selected * MERGE_RATIO)));
      }

      const freshSegment = { messageIds: chosen.map((m) => m.id), replacesSummaryIds: [], content: fresh.text, focusSections: sections, truncated: fresh.truncated };
      if (mergeCount === 0) return { summaries: [freshSegment] };

      const oldest = existing.slice(0, mergeCount);
      const mergeSections = [...new Set(oldest.flatMap((s) => s.focusSections))];
      try {
        const merged = await summarize(ctx, systemPrompt(mergeSections.length ? mergeSections : sections), mergePrompt(oldest, mergeBudget), mergeBudget, inputWindow);
        return {
          summaries: [
            { messageIds: [], replacesSummaryIds: oldest.map((s) => s.id), content: merged.text, focusSections: mergeSections, truncated: merged.truncated },
            freshSegment,
          ],
        };
      } catch (error) {
        // The new summary is not dropped: it is returned alone and the merge waits for a later turn.
        return { summaries: [freshSegment], deferred: { reason: `merging ${mergeCount} old summaries failed: ${error.message}` } };
      }
    },
  });
}
