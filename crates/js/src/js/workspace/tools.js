// `@covel/tools` as upstream's bundled plugins import it (npc-graph, world-init, world-time):
// a thin module re-exporting the names upstream's package shares with the SDK. The loader notes
// every import of it (`workspace-package-import`): a community plugin imports these names from
// `@covel/plugin-handlers-utils`. A name not listed here is an import error naming the module
// and the name.
export {
  getPendingProposals, getToolContent, withPendingProposals, getEmittedEvents, withEmittedEvents,
  overlayPluginDataValue, overlayPluginDataRows, shortId, shortIdBatch, FRAMEWORK_TOOL_NAMES,
} from "@covel/plugin-handlers-utils";
