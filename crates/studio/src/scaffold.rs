//! Starting a plugin in one step (`covel new`, the window's "New plugin"): a plugin folder
//! (PLUGIN.md, an entry with one provider per chosen extension point, a short README) and a
//! test session beside it with one expectation per provider, all of which `covel validate` and
//! `covel test` accept as they are. It never writes over an existing file.

use std::path::{Path, PathBuf};

/// The extension points a new plugin can start with, as `--point` takes them.
pub const POINTS: &[&str] = &[
    "prompt.segment@1",
    "ui.slot@1:stage.backdrop@1",
    "ui.slot@1:stage.choices@1",
    "ui.slot@1:stage.music@1",
];

/// One provider the new plugin gets: its manifest lines, its handler and the expectation that
/// checks it in the test session.
struct Provider {
    manifest: String,
    code: String,
    expectation: String,
}

/// The slots `--point ui.slot@1:SLOT` can start, with a first value that fits each.
const SLOTS: &[(&str, &str, &str)] = &[
    (
        "stage.backdrop@1",
        r#"{ sceneId: "harbour", name: "The Harbour", variant: "night" }"#,
        "pointer: /name, equals: The Harbour",
    ),
    (
        "stage.choices@1",
        r#"{ decision: "What do you do?", choices: [{ id: "look", text: "Look around" }, { id: "wait", text: "Wait" }] }"#,
        "pointer: /choices/0/text, equals: Look around",
    ),
    (
        "stage.music@1",
        r#"{ trackId: "calm", title: "Calm", loop: true, volume: 0.6 }"#,
        "pointer: /trackId, equals: calm",
    ),
];

fn provider(id: &str, point: &str) -> Result<Provider, String> {
    if point == "prompt.segment@1" {
        return Ok(Provider {
            manifest: "    - point: prompt.segment@1\n      id: guidance\n".into(),
            code: format!(
                r#"  // A passage of the system prompt. `volatility: "stable"` keeps it in the cached prefix.
  covel.provideExtension("prompt.segment@1", "guidance", {{
    handler: () => [
      {{
        id: "guidance",
        content: "Describe one sound in every scene. ({id})",
        position: "system",
        audience: "story",
        volatility: "stable",
      }},
    ],
  }});
"#
            ),
            expectation: format!(
                "        - system: {{ contains: \"Describe one sound in every scene. ({id})\" }}\n"
            ),
        });
    }
    if let Some(slot) = point.strip_prefix("ui.slot@1:") {
        let Some((_, value, check)) = SLOTS.iter().find(|(name, _, _)| *name == slot) else {
            let known: Vec<&str> = SLOTS.iter().map(|(name, _, _)| *name).collect();
            return Err(format!(
                "`{slot}`: a new plugin starts ui.slot@1 providers for {}; add one for {slot} to the entry by hand",
                known.join(", ")
            ));
        };
        let provider_id = slot.trim_end_matches("@1").replace('.', "-");
        return Ok(Provider {
            manifest: format!(
                "    - point: ui.slot@1\n      id: {provider_id}\n      slot: {slot}\n      watch: [state]\n"
            ),
            code: format!(
                r#"  // The {slot} slot's value, projected again whenever the plugin's `state` data changes.
  covel.provideExtension("ui.slot@1", "{provider_id}", {{
    handler: async (_input, ctx) => (await ctx.pluginData.get("state", "{provider_id}")) ?? {value},
  }});
"#
            ),
            expectation: format!("        - slot: {{ slot: {slot}, {check} }}\n"),
        });
    }
    Err(format!(
        "`{point}`: give prompt.segment@1 or ui.slot@1:SLOT (SLOT one of {})",
        SLOTS
            .iter()
            .map(|(name, _, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.ends_with('-')
}

/// Writes `text` to a new file (never over an existing one), creating its folder.
fn write_new(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            format!(
                "creating {} (it is never written over): {e}",
                path.display()
            )
        })?;
    std::io::Write::write_all(&mut file, text.as_bytes())
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// What [`create`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub folder: PathBuf,
    pub entry: &'static str,
    pub session: PathBuf,
}

/// Starts plugin `id` in the plugins folder `dir` with one provider per point
/// (`prompt.segment@1`, `ui.slot@1:SLOT`; none: a prompt segment), in TypeScript when `ts`.
/// Nothing is written when the id, a point or an existing file says no.
pub fn create(dir: &Path, id: &str, points: &[String], ts: bool) -> Result<Created, String> {
    if !valid_id(id) {
        return Err(format!(
            "`{id}` is not a plugin id: lower-case letters, digits and dashes, starting with a letter (e.g. `weather-report`)"
        ));
    }
    let points = if points.is_empty() {
        vec!["prompt.segment@1".to_string()]
    } else {
        points.to_vec()
    };
    let providers = points
        .iter()
        .map(|p| provider(id, p))
        .collect::<Result<Vec<_>, _>>()?;
    let folder = dir.join(id);
    if folder.exists() {
        return Err(format!(
            "{} already exists: choose another id (nothing was written)",
            folder.display()
        ));
    }
    let session = dir.join("tests").join(format!("{id}.session.yaml"));
    if session.exists() {
        return Err(format!(
            "{} already exists: choose another id (nothing was written)",
            session.display()
        ));
    }
    let entry = if ts {
        "server/index.ts"
    } else {
        "server/index.js"
    };
    let manifest = format!(
        "---\nid: {id}\nkind: plugin\nversion: 0.1.0\ndisplayName: {id}\ndescription: What {id} adds to the story (one sentence).\nentry: ./{entry}\ncontributes:\n  extensions:\n{}---\n\n# {id}\n\nWhat the plugin does, for the people who install it.\n",
        providers
            .iter()
            .map(|p| p.manifest.as_str())
            .collect::<String>()
    );
    let signature = if ts {
        "export default function (covel: any) {\n"
    } else {
        "export default function (covel) {\n"
    };
    let code = format!(
        "// The entry of {id}: one provider per extension point PLUGIN.md declares.\n{signature}{}}}\n",
        providers
            .iter()
            .map(|p| p.code.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let readme = format!(
        "# {id}\n\nStarted with `covel new` (or the studio's \"New plugin\"). Open its folder in Covel Studio, or:\n\n    covel validate DIR\n    covel test DIR\n\nThe test session `tests/{id}.session.yaml` checks what each provider gives.\n"
    );
    let test = format!(
        "# A test session for {id} (docs/testing.md): `covel test` plays its turn and checks it.\nid: {id}\nlocale: en\nworld:\n  worldRecord: {{ id: demo, name: Demo, description: A place to try the plugin. }}\nstoryPrompt: |\n  You are the narrator of an interactive story set in {{{{ world.name }}}}.\nnextMessage: I look around.\ntest:\n  plugins: ..\n  turns:\n    - say: I look around.\n      reply: You see a quiet street.\n      expect:\n{}",
        providers
            .iter()
            .map(|p| p.expectation.as_str())
            .collect::<String>()
    );
    // The entry is written before the manifest: a watching studio that sees the manifest first
    // finds the entry it names.
    write_new(&folder.join(entry), &code)?;
    write_new(&folder.join("README.md"), &readme)?;
    write_new(&session, &test)?;
    write_new(&folder.join("PLUGIN.md"), &manifest)?;
    Ok(Created {
        folder,
        entry,
        session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_ids_are_lower_case_words_joined_by_dashes() {
        assert!(valid_id("weather-report"));
        assert!(valid_id("a1"));
        assert!(!valid_id("Weather"));
        assert!(!valid_id("1abc"));
        assert!(!valid_id("with space"));
        assert!(!valid_id("trailing-"));
        assert!(!valid_id(""));
    }
}
