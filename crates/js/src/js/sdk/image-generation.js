// @covel/plugin-handlers-utils/image-generation — the shared trunk of image-generation handlers.
import { optionalString, abortSignalWithTimeout } from "@covel/plugin-handlers-utils";

const IMAGES_NAMESPACE = "images";
const asRecord = (value) => (value && typeof value === "object" && !Array.isArray(value) ? value : null);
const errorText = (error) => (error instanceof Error ? error.message : String(error));

function promptFrom(payload, extraFields) {
  const rec = asRecord(payload);
  const prompt = rec ? optionalString(rec.prompt) : undefined;
  if (!rec || !prompt) return null;
  const extras = {};
  for (const [field, fallback] of Object.entries(extraFields)) extras[field] = optionalString(rec[field]) ?? fallback;
  return { prompt, promptMode: optionalString(rec.promptMode) ?? "text", extras };
}

/**
 * The prompt of an image request, `{prompt, promptMode, extras}`: from the trigger event when
 * its topic is `config.triggerTopic`, else from `ctx.manualPayload`; null when neither has one.
 */
export function extractImagePrompt(ctx, config) {
  const extraFields = config.extraPromptFields ?? {};
  const trigger = asRecord(ctx.triggerEvent);
  if (trigger && trigger.topic === config.triggerTopic) {
    const fromEvent = promptFrom(trigger.data, extraFields);
    if (fromEvent) return fromEvent;
  }
  return promptFrom(ctx.manualPayload, extraFields);
}

// The first image settles the pending gallery entry under the request's own id; the others of
// a batch get ids of their own next to it, so a gallery never keeps a pending row behind.
const recordKey = (imageId, index) => (index === 0 ? imageId : `${imageId}-${index + 1}`);

/** Why a run was skipped when the host has no image model for the request. */
const NO_IMAGE_MODEL = "image model unavailable";

/**
 * Whether the host can make images for `presetId` now: `ctx.images` exists and, when it can
 * say so, `isAvailable(presetId)` does not say no (an older host without `isAvailable` is
 * taken at its word that it has the pipeline).
 */
function imageModelAvailable(ctx, presetId) {
  if (!ctx.images || typeof ctx.images.generate !== "function") return false;
  return typeof ctx.images.isAvailable !== "function" || ctx.images.isAvailable(presetId) !== false;
}

/** A failed generation, recorded in the gallery; still a `success` outcome, the failure is its value. */
async function failed(ctx, base, message) {
  const record = { ...base, status: "failed", error: message, completedAt: new Date().toISOString() };
  await ctx.pluginData?.set(IMAGES_NAMESPACE, base.imageId, record);
  await ctx.logger?.error?.("image.generate.failed", { imageId: base.imageId, error: message });
  return {
    outcome: "success",
    value: { imageId: base.imageId, status: "failed", error: message, prompt: base.prompt, promptMode: base.promptMode },
    effects: { pluginData: [{ namespace: IMAGES_NAMESPACE, key: base.imageId, value: record }] },
  };
}

/**
 * A whole image-generation handler, answering a handler result: `{outcome: "skipped",
 * skipReason}` without a prompt or without an image model for the plan's preset (nothing is
 * written then), else a pending gallery record, `ctx.images.generate` with the plan from
 * `config.planRequest(settings, extracted)`, and `{outcome: "success", value, effects:
 * {pluginData, assetGenerations}}`. A provider's failure is recorded in the gallery and is the
 * success's value (`status: "failed"`), so the author sees it.
 */
export async function runImageGeneration(ctx, config) {
  if (!ctx.images) return { outcome: "skipped", skipReason: NO_IMAGE_MODEL };
  const extracted = extractImagePrompt(ctx, config);
  if (!extracted) {
    await ctx.logger?.warn?.("no-prompt-found", { hasTriggerEvent: !!ctx.triggerEvent });
    return {
      outcome: "skipped",
      skipReason: `no image prompt found: expected ctx.manualPayload.prompt or an event with topic ${config.triggerTopic} whose data has a prompt`,
    };
  }
  const plan = config.planRequest(asRecord(ctx.userSettings) ?? {}, extracted);
  // Asked before anything is written: a session without an image model retries freely and
  // leaves no pending entries behind.
  if (!imageModelAvailable(ctx, plan.presetId)) return { outcome: "skipped", skipReason: NO_IMAGE_MODEL };
  const { prompt } = plan;
  const { promptMode, extras } = extracted;
  const imageId = `img-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const startedAt = new Date().toISOString();
  const base = {
    imageId,
    prompt,
    promptMode,
    ...extras,
    turnId: ctx.turnId,
    presetId: plan.presetId,
    imageSize: plan.size,
    n: plan.n,
    requestTimeoutMs: plan.requestTimeoutMs,
    ...(plan.recordFields ?? {}),
    startedAt,
  };
  await ctx.pluginData?.set(IMAGES_NAMESPACE, imageId, { ...base, status: "pending" });
  await ctx.logger?.info?.("image.generate.started", {
    imageId,
    presetId: plan.presetId,
    imageSize: plan.size,
    n: plan.n,
    requestTimeoutMs: plan.requestTimeoutMs,
    ...(plan.quality !== undefined ? { quality: plan.quality } : {}),
  });
  try {
    const { refs, warnings = [], cached } = await ctx.images.generate({
      presetId: plan.presetId,
      prompt,
      size: plan.size,
      n: plan.n,
      quality: plan.quality || undefined,
      negativePrompt: plan.negativePrompt || undefined,
      signal: abortSignalWithTimeout(undefined, plan.requestTimeoutMs),
      metadata: { source: config.source, turnId: ctx.turnId },
    });
    if (!Array.isArray(refs) || refs.length === 0) {
      return failed(ctx, base, `Provider returned no images.${warnings.length > 0 ? ` Warnings: ${warnings.join("; ")}` : ""}`);
    }
    const completedAt = new Date().toISOString();
    const records = refs.map((ref, index) => ({
      key: recordKey(imageId, index),
      value: {
        ...base,
        imageId: recordKey(imageId, index),
        batchId: imageId,
        imageIndex: index,
        imageCount: refs.length,
        status: "done",
        ref,
        ...(cached ? { cached: true } : {}),
        ...(warnings.length > 0 ? { warnings } : {}),
        completedAt,
        durationMs: Date.parse(completedAt) - Date.parse(startedAt),
      },
    }));
    const assets = refs.map((ref, imageIndex) => ({
      ref,
      modality: "image",
      meta: { prompt, imageSize: plan.size, imageId, imageIndex, mime: ref.mime, byteSize: ref.size },
    }));
    await ctx.logger?.info?.("image.generate.completed", {
      imageId,
      durationMs: records[0].value.durationMs,
      imageCount: refs.length,
      cached,
      ...(warnings.length > 0 ? { warnings } : {}),
    });
    return {
      outcome: "success",
      value: {
        imageId,
        status: "done",
        ref: refs[0],
        ...(refs.length > 1 ? { refs } : {}),
        ...(warnings.length > 0 ? { warnings } : {}),
        ...(cached ? { cached: true } : {}),
        prompt,
        promptMode,
        ...extras,
      },
      effects: {
        pluginData: records.map((r) => ({ namespace: IMAGES_NAMESPACE, key: r.key, value: r.value })),
        assetGenerations: assets,
      },
    };
  } catch (error) {
    return failed(ctx, base, errorText(error));
  }
}
