//! The session's World Model as every call site sees it (seed page, "What a handler can get"
//! and "Session world context"): the committed world view (`ctx.world`), the public dimension
//! snapshot built from the dimension provider's `_dimensions` records, and the rule that a world
//! declaring dimensions needs exactly one enabled `world.dimensions@1` provider — never the
//! author's initial values instead.

use crate::context::DataRow;
use crate::manifest::Manifest;
use crate::session::World;
use serde_json::{Map, Value, json};

/// The contract a world with dimensions requires.
pub const DIMENSIONS_CONTRACT: &str = "world.dimensions@1";
/// The namespace holding a dimension provider's records.
pub const DIMENSIONS_NAMESPACE: &str = "_dimensions";

/// The contracts the session's world requires of its plugins: `world.dimensions@1` when the
/// world declares dimensions.
pub fn required_contracts(world: &World) -> Vec<String> {
    if world.dimensions.is_empty() {
        Vec::new()
    } else {
        vec![DIMENSIONS_CONTRACT.to_string()]
    }
}

/// The plugins among the active ones that provide `world.dimensions@1`, by id.
pub fn dimension_providers<'a>(active: impl IntoIterator<Item = &'a Manifest>) -> Vec<String> {
    active
        .into_iter()
        .filter(|manifest| {
            manifest
                .provides
                .iter()
                .any(|p| p.contract == DIMENSIONS_CONTRACT)
        })
        .map(|manifest| manifest.id.clone())
        .collect()
}

/// The dimension rule: a world that declares dimensions needs exactly one enabled
/// `world.dimensions@1` provider. `None` when it holds, else why it does not.
pub fn dimension_rule_violation(world: &World, dimension_providers: &[String]) -> Option<String> {
    if world.dimensions.is_empty() || dimension_providers.len() == 1 {
        return None;
    }
    let found = if dimension_providers.is_empty() {
        "none is enabled".to_string()
    } else {
        format!(
            "{} are enabled ({})",
            dimension_providers.len(),
            dimension_providers.join(", ")
        )
    };
    Some(format!(
        "the world declares dimensions, so the session needs exactly one enabled world.dimensions@1 provider, but {found}; the author's initial values are never used instead"
    ))
}

/// The committed World Model view (`ctx.world`): `worldRecord`, `characterSchema`,
/// `characters`, `dimensions`, `seats`, and `dimensionProviderPluginId` when exactly one
/// dimension provider is enabled. With none or several, `dimensions` is empty: the author's
/// initial values never stand in for the provider's snapshot.
pub fn world_view(world: &World, plugin_data: &[DataRow], dimension_providers: &[String]) -> Value {
    let (dimensions, provider) = match dimension_providers {
        [one] => (dimension_snapshot(plugin_data, one), Some(one.clone())),
        _ => (Map::new(), None),
    };
    let mut view = json!({
        "worldRecord": world.world_record,
        "characterSchema": world.character_schema,
        "characters": world.characters,
        "dimensions": dimensions,
        "seats": world.seats,
    });
    if let (Some(provider), Some(map)) = (provider, view.as_object_mut()) {
        map.insert("dimensionProviderPluginId".into(), Value::String(provider));
    }
    view
}

/// The public snapshot `{id: {name, description?, schema, value, version}}` built from the
/// provider's committed `_dimensions` records (no initial values, no rules).
pub fn dimension_snapshot(plugin_data: &[DataRow], provider: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for row in plugin_data
        .iter()
        .filter(|r| r.plugin_id == provider && r.namespace == DIMENSIONS_NAMESPACE)
    {
        let definition = row.value.get("definition");
        let mut entry = json!({
            "name": definition.and_then(|d| d.get("name")).cloned().unwrap_or(Value::Null),
            "schema": definition.and_then(|d| d.get("schema")).cloned().unwrap_or_else(|| json!({})),
            "value": row.value.get("value").cloned().unwrap_or(Value::Null),
            "version": row.value.get("version").cloned().unwrap_or(json!(1)),
        });
        if let (Some(description), Some(map)) = (
            definition.and_then(|d| d.get("description")),
            entry.as_object_mut(),
        ) {
            map.insert("description".into(), description.clone());
        }
        out.insert(row.key.clone(), entry);
    }
    out
}
