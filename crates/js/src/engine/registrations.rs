//! The registrations the entry staged, read back from the bootstrap with the plugin's own call
//! site of each (file, line and the column of the registration call).

use super::*;

/// The facade's registration methods.
const REGISTRATION_METHODS: &[&str] = &[
    "provideExtension",
    "registerTool",
    "registerService",
    "on",
    "registerRpc",
    "registerFormValidator",
    "registerWires",
];

/// The first frame of a stack that names one of the plugin's own modules (as the loader
/// recorded them): where the plugin made the call (the facade's own frames come first). The
/// engine's column is where it last recorded a position, often inside an argument; the call on
/// that line is found in the module's recorded text (the last registration call starting at or
/// before that column). The stack is text plugin code can shape (`Error.prepareStackTrace`), so
/// a frame naming anything else is no site, and no file is ever opened for it.
pub(super) fn plugin_frame(
    stack: &str,
    loaded: &[crate::modules::LoadedModule],
    calls: &mut BTreeMap<PathBuf, Vec<(u32, u32)>>,
) -> Option<Site> {
    let (file, (line, column)) = first_frame_in(stack, loaded)?;
    let known = calls.entry(file.clone()).or_insert_with(|| {
        crate::modules::source_among(loaded, &file)
            .map(|source| crate::imports::method_calls(&file, &source, REGISTRATION_METHODS))
            .unwrap_or_default()
    });
    let on_line: Vec<u32> = known
        .iter()
        .filter(|(l, _)| *l == line)
        .map(|(_, c)| *c)
        .collect();
    let column = on_line
        .iter()
        .copied()
        .filter(|c| *c <= column)
        .max()
        .or_else(|| on_line.first().copied())
        .unwrap_or(column);
    Some(Site { file, line, column })
}

pub(super) fn registrations_from(
    staged: &Json,
    loaded: &[crate::modules::LoadedModule],
) -> Registrations {
    let strings = |field: &str| -> Vec<String> {
        staged
            .get(field)
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let mut calls = BTreeMap::new();
    let sites: Vec<(String, Site)> = staged
        .get("sites")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let key = s.get("key").and_then(Json::as_str)?;
            let site = plugin_frame(
                s.get("stack").and_then(Json::as_str).unwrap_or_default(),
                loaded,
                &mut calls,
            )?;
            Some((key.to_string(), site))
        })
        .collect();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let extensions = staged
        .get("extensions")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let point = e
                .get("point")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            let id = e
                .get("id")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            let key = format!("extension:{point}/{id}");
            let nth = seen.entry(key.clone()).or_default();
            let site = sites
                .iter()
                .filter(|(k, _)| *k == key)
                .nth(*nth)
                .map(|(_, s)| s.clone());
            *nth += 1;
            ProvidedExtension {
                point,
                id,
                handler_is_function: e
                    .get("handlerIsFunction")
                    .and_then(Json::as_bool)
                    .unwrap_or(false),
                site,
            }
        })
        .collect();
    let text = |v: &Json, field: &str| {
        v.get(field)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let list = |field: &str| {
        staged
            .get(field)
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let tool_specs = list("toolSpecs")
        .iter()
        .map(|t| ToolSpec {
            name: text(t, "name"),
            description: text(t, "description"),
            parameters: t.get("parameters").cloned().unwrap_or(Json::Null),
        })
        .collect();
    let hook_specs = list("hookSpecs")
        .iter()
        .map(|h| HookSpec {
            event: text(h, "event"),
            enforce: text(h, "enforce"),
            key: text(h, "key"),
            timeout_ms: h.get("timeoutMs").and_then(Json::as_u64),
            handler_is_function: h
                .get("handlerIsFunction")
                .and_then(Json::as_bool)
                .unwrap_or(false),
        })
        .collect();
    Registrations {
        tool_specs,
        hook_specs,
        extensions,
        tools: strings("tools"),
        actions: strings("actions"),
        services: strings("services"),
        forms: strings("forms"),
        wires: strings("wires"),
        hooks: strings("hooks"),
        refused_late: strings("refusedLate"),
        sites,
    }
}
