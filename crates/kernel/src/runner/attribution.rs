//! Provenance the kernel owns: it is stamped by the kernel after validation, and whatever the
//! plugin wrote in those fields is overwritten. An output is shared (an engine's memo holds it):
//! it is copied only where a stamp changes it, and a point that stamps nothing hands it on as is.

use super::Provider;
use crate::contract::PointId;
use serde_json::Value;
use std::sync::Arc;

/// Stamps provenance on a validated output, or explains why the output is not acceptable.
/// Segments are left unstamped when `segments_stamped_later` (a shared segment run: the
/// assembly reads each part's segments with its provider's plugin id, `Segment::parse_parts`).
pub(super) fn attribute(
    point: PointId,
    provider: &Provider,
    mut value: Arc<Value>,
    segments_stamped_later: bool,
) -> Result<Arc<Value>, String> {
    let pid = &provider.plugin_id;
    match point {
        PointId::PromptSegment if segments_stamped_later => {}
        PointId::PromptSegment => {
            for segment in Arc::make_mut(&mut value)
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                if let Some(map) = segment.as_object_mut() {
                    map.insert("providerPluginId".into(), Value::String(pid.clone()));
                }
            }
        }
        PointId::MediaImageFlow => {
            // Ownership is decided on whole path components and on the runtimes the provider
            // really registered: `attacker/../victim/generate` is neither.
            let ids = std::iter::once(value.get("entryRuntimeId")).chain(
                value
                    .get("assetRuntimeIds")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(Some),
            );
            for id in ids.flatten().filter_map(Value::as_str) {
                let components_ok = id.split('/').next() == Some(pid.as_str())
                    && !id.split('/').any(|c| c.is_empty() || c == "." || c == "..");
                if !components_ok {
                    return Err(format!(
                        "Image flow can only declare its provider's runtimes: `{id}` does not belong to `{pid}`"
                    ));
                }
                if !provider.runtime_ids.iter().any(|r| r == id) {
                    return Err(format!(
                        "Image flow names runtime `{id}`, which `{pid}` does not have (its runtimes: {})",
                        if provider.runtime_ids.is_empty() {
                            "none".to_string()
                        } else {
                            provider.runtime_ids.join(", ")
                        }
                    ));
                }
            }
            if let Some(map) = Arc::make_mut(&mut value).as_object_mut() {
                map.insert("pluginId".into(), Value::String(pid.clone()));
            }
        }
        PointId::SessionWorldContext => {
            if let Some(recovery) = value.get("dimensionRecovery") {
                for field in ["editorRuntimeId", "trackerRuntimeId"] {
                    let id = recovery
                        .get(field)
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !provider.runtime_ids.iter().any(|r| r == id) {
                        return Err(format!(
                            "Dimension recovery runtime is not owned by the active provider: {field} `{id}` is not a runtime of `{pid}`"
                        ));
                    }
                }
            }
            // `dimensionProviderPluginId` is injected by the host: whatever the plugin wrote
            // there is overwritten with the provider's own plugin id.
            if let Some(map) = Arc::make_mut(&mut value).as_object_mut() {
                map.insert(
                    "dimensionProviderPluginId".into(),
                    Value::String(pid.clone()),
                );
            }
        }
        PointId::PromptHistoryTransform | PointId::UiSlot | PointId::HistoryCompact => {}
    }
    Ok(value)
}
