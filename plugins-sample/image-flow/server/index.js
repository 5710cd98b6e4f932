export default function (covel) {
  covel.provideExtension("media.image-flow@1", "illustrations", {
    handler: () => ({ entryRuntimeId: "image-flow/generate", assetRuntimeIds: ["image-flow/store-asset"] }),
  });
}
