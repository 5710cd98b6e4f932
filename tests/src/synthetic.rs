//! Synthetic plugin folders for performance runs, shaped like `shared/bench/gen-plugins.py`:
//! two prompt segments per plugin (one stable, one turn-volatile reading plugin data), a slot
//! provider in every fifth plugin, and world context in the first.

use std::fs;
use std::io;
use std::path::Path;

const SLOTS: [&str; 5] = [
    "stage.backdrop@1",
    "stage.cast@1",
    "stage.choices@1",
    "session.summary@1",
    "stage.music@1",
];

fn slot_value(slot: &str) -> &'static str {
    match slot {
        "stage.backdrop@1" => r#"{ sceneId: "s" + n, name: "Hall " + n, variant: "night" }"#,
        "stage.cast@1" => {
            r#"{ actors: [...(previous?.actors ?? []), { characterId: "c" + n, displayName: "Actor " + n }], retainWhenEmpty: false }"#
        }
        "stage.choices@1" => r#"{ choices: [{ id: "go" + n, text: "Go " + n }] }"#,
        "session.summary@1" => {
            r#"{ entries: [...(previous?.entries ?? []), { id: "e" + n, label: "Line " + n, kind: "text", value: "v" }].slice(0, 16) }"#
        }
        _ => r#"{ trackId: "t" + n, loop: true, volume: 0.5 }"#,
    }
}

/// Writes `count` plugins named `gen-000`… into `dir`.
pub fn write_plugins(dir: &Path, count: usize) -> io::Result<()> {
    for i in 0..count {
        let id = format!("gen-{i:03}");
        let root = dir.join(&id);
        fs::create_dir_all(root.join("server"))?;
        let mut extensions = vec![
            format!(
                "    - {{ point: prompt.segment@1, id: lore, order: {} }}",
                i % 7
            ),
            "    - { point: prompt.segment@1, id: state }".to_string(),
        ];
        let mut body = vec![
            format!("  const n = {i};"),
            r#"  covel.provideExtension("prompt.segment@1", "lore", {
    handler: () => [{ id: "lore", content: "Lore of plugin " + n + ". " + "The hall is old. ".repeat(20),
      position: "system", audience: "story", volatility: "stable", order: n % 7 }],
  });
  covel.provideExtension("prompt.segment@1", "state", {
    handler: async (input, ctx) => {
      const mood = (await ctx.pluginData.get("state", "mood")) ?? "calm";
      return [{ id: "state", content: "Mood " + mood + " after: " + input.playerMessage,
        position: "system", audience: "all", volatility: "turn" }];
    },
  });"#
                .to_string(),
        ];
        if i % 5 == 0 {
            let slot = SLOTS[(i / 5) % SLOTS.len()];
            extensions.push(format!(
                "    - {{ point: ui.slot@1, id: view, slot: {slot}, order: {i} }}"
            ));
            body.push(format!(
                "  covel.provideExtension(\"ui.slot@1\", \"view\", {{\n    handler: ({{ previous }}) => ({}),\n  }});",
                slot_value(slot)
            ));
        }
        if i == 0 {
            extensions.push("    - { point: session.world-context@1, id: world }".to_string());
            body.push(
                r#"  covel.provideExtension("session.world-context@1", "world", {
    handler: () => ({ entries: { era: "iron" }, dimensions: { trust: { name: "Trust", schema: { type: "integer" }, value: 3, version: 1 } } }),
  });"#
                    .to_string(),
            );
        }
        let manifest = format!(
            "---\nid: {id}\nkind: plugin\nversion: 0.1.0\ndescription: Generated plugin {i} for performance runs\nentry: ./server/index.js\ncontributes:\n  extensions:\n{}\n---\n",
            extensions.join("\n")
        );
        fs::write(root.join("PLUGIN.md"), manifest)?;
        fs::write(
            root.join("server/index.js"),
            format!(
                "export default function (covel) {{\n{}\n}}\n",
                body.join("\n")
            ),
        )?;
    }
    Ok(())
}
