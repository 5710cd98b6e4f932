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

/// The first frame of a stack that is inside the plugin's own modules: where the plugin made
/// the call (the facade's own frames come first). The engine's column is where it last
/// recorded a position, often inside an argument; the call on that line is found in the source
/// (the last registration call starting at or before that column).
pub(super) fn plugin_frame(
    stack: &str,
    root: &std::path::Path,
    calls: &mut BTreeMap<PathBuf, Vec<(u32, u32)>>,
) -> Option<Site> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let (file, (line, column)) = stack
        .lines()
        .find_map(|line| first_frame(line).filter(|(file, _)| file.starts_with(&root)))?;
    let known = calls
        .entry(file.clone())
        .or_insert_with(|| crate::imports::method_calls(&file, REGISTRATION_METHODS));
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

pub(super) fn registrations_from(staged: &Json, root: &std::path::Path) -> Registrations {
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
                root,
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
    Registrations {
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
