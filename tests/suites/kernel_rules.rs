//! The kernel foundation, rule by rule: the seed page's sections "Declaring and registering",
//! "Combination modes", "What a handler can get" (the runner's part) and "Contract versions and
//! compatibility". Each test names the rule it checks; fixtures live in `tests/fixtures`.

use covel_kernel::Code;
use covel_kernel::context::{ExecutionContext, SessionView};
use covel_kernel::contract::{Mode, OnError, PointId, SlotId};
use covel_kernel::runner::{self, Outcome, RunError, RunOptions};
use covel_tests::*;
use serde_json::{Value, json};
use std::fs;

fn segment_input() -> Value {
    json!({"turnId": "t1", "playerMessage": "I look around."})
}

/// `prompt.segment@1` over Rust providers, in a fresh execution.
fn run_segments(providers: &[runner::Provider]) -> runner::RunResult {
    runner::run(
        PointId::PromptSegment,
        segment_input(),
        providers,
        &ExecutionContext::empty(),
        &RunOptions::default(),
    )
}

/// Runs `work` on a pool of its own with two workers. The tests of "runs at once" ask whether
/// the kernel hands different engines' chains to different workers; on the shared global pool,
/// the other tests of this binary can keep both workers busy for seconds, and the chains then
/// run one after another however the kernel hands them out.
fn on_two_free_workers<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("a pool of two workers")
        .install(work)
}

fn call_for<'a>(result: &'a runner::RunResult, plugin: &str, id: &str) -> &'a runner::CallRecord {
    result
        .calls
        .iter()
        .find(|c| &*c.plugin_id == plugin && &*c.provider_id == id)
        .unwrap_or_else(|| panic!("no call for {plugin}/{id} in {:?}", result.calls))
}

// ---- Declaring and registering ----------------------------------------------------------------

#[test]
fn every_broken_fixture_yields_its_own_clear_diagnostic() {
    let plugins = load("broken");
    for plugin in &plugins {
        let expected = fs::read_to_string(plugin.folder.join("expected-code"))
            .expect("each broken fixture names its code");
        let first = plugin
            .diagnostics
            .first()
            .unwrap_or_else(|| panic!("{} loaded without a diagnostic", plugin.name));
        assert_eq!(
            first.code.as_str(),
            expected.trim(),
            "{}: {:?}",
            plugin.name,
            plugin.diagnostics
        );
        assert!(plugin.instance.is_none(), "{} must not run", plugin.name);
        assert!(
            first.file.is_some(),
            "{}: a diagnostic names its file",
            plugin.name
        );
        assert!(
            first.line.is_some_and(|l| l > 0) && first.column.is_some_and(|c| c > 0),
            "{}: and the position in it: {first:?}",
            plugin.name
        );
    }
    insta::assert_json_snapshot!("broken_fixture_diagnostics", diagnostics_of(&plugins));
}

#[test]
fn declared_but_not_registered_fails_the_load() {
    let plugins = load_some(&["broken/missing-extension"]);
    assert_eq!(plugins[0].diagnostics[0].code, Code::MissingExtension);
    let d = &plugins[0].diagnostics[0];
    // `    - point: prompt.segment@1` on line 7: the item starts at its `-`, column 5.
    assert_eq!(
        (d.line, d.column),
        (Some(7), Some(5)),
        "points at the declaration's item"
    );
    assert_eq!(
        d.file.as_deref(),
        Some(std::path::Path::new("missing-extension/PLUGIN.md"))
    );
}

/// The advice of `[undeclared-extension]` for a `ui.slot@1` provider is a declaration that loads:
/// it names the slot (without `slot:` the declaration itself is refused).
#[test]
fn the_undeclared_slot_advice_is_a_declaration_that_loads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("undeclared-slot");
    copy_dir(&fixture("broken/undeclared-slot"), &plugin);
    let before =
        covel_js::load_plugins(std::slice::from_ref(&plugin), &covel_js::Limits::default());
    let d = &before[0].diagnostics[0];
    assert_eq!(d.code, Code::UndeclaredExtension);
    let snippet = d
        .message
        .split("(add ")
        .nth(1)
        .and_then(|rest| rest.split(" to contributes.extensions").next())
        .unwrap_or_else(|| panic!("a snippet in {}", d.message));
    assert_eq!(snippet, "{point: ui.slot@1, id: cast, slot: stage.cast@1}");
    let manifest = fs::read_to_string(plugin.join("PLUGIN.md")).expect("manifest");
    let fixed = manifest.replacen(
        "\n---\n",
        &format!("\ncontributes:\n  extensions:\n    - {snippet}\n---\n"),
        1,
    );
    fs::write(plugin.join("PLUGIN.md"), fixed).expect("write");
    let after = covel_js::load_plugins(&[plugin], &covel_js::Limits::default());
    assert!(after[0].ok(), "{:?}", after[0].diagnostics);
}

/// "Declared and registered must agree both ways" for tools, actions, services, forms, wires and
/// hooks: the advice of `[undeclared-registration]` names the call and the item to declare, and
/// adding exactly that item under the field it names makes the plugin load.
#[test]
fn the_undeclared_registration_advice_is_a_declaration_that_loads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("undeclared-form");
    copy_dir(&fixture("broken/undeclared-form"), &plugin);
    let before =
        covel_js::load_plugins(std::slice::from_ref(&plugin), &covel_js::Limits::default());
    let mut fields: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for d in &before[0].diagnostics {
        assert_eq!(d.code, Code::UndeclaredRegistration, "{d:?}");
        // "… (add ITEM to contributes.FIELD, or remove the call)"
        let advice = d
            .message
            .split("(add ")
            .nth(1)
            .unwrap_or_else(|| panic!("advice in {}", d.message));
        let (item, rest) = advice
            .split_once(" to contributes.")
            .unwrap_or_else(|| panic!("a field in {}", d.message));
        let field = rest.split(',').next().expect("field");
        fields
            .entry(field.to_string())
            .or_default()
            .push(item.to_string());
    }
    assert_eq!(
        fields,
        [
            ("forms".to_string(), vec!["coin-split".to_string()]),
            (
                "hooks".to_string(),
                vec!["{event: TurnStop, enforce: normal}".to_string()]
            ),
        ]
        .into(),
        "the form and the hook, each with its own field: {:?}",
        before[0].diagnostics
    );
    assert!(
        before[0].diagnostics[0]
            .message
            .contains("covel.registerFormValidator"),
        "names the call: {}",
        before[0].diagnostics[0].message
    );
    let block: String = fields
        .iter()
        .map(|(field, items)| {
            let items: String = items.iter().map(|i| format!("    - {i}\n")).collect();
            format!("  {field}:\n{items}")
        })
        .collect();
    let manifest = fs::read_to_string(plugin.join("PLUGIN.md")).expect("manifest");
    let fixed = manifest.replacen("\n---\n", &format!("\ncontributes:\n{block}---\n"), 1);
    fs::write(plugin.join("PLUGIN.md"), fixed).expect("write");
    let after = covel_js::load_plugins(&[plugin], &covel_js::Limits::default());
    assert!(after[0].ok(), "{:?}", after[0].diagnostics);
}

/// A name that is declared but registered more often than declared is a duplicate: the advice
/// says to register it once, not to declare it (it already is).
#[test]
fn a_registration_beyond_its_declaration_is_named_a_duplicate() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("twice");
    fs::create_dir_all(plugin.join("server")).expect("dir");
    fs::write(
        plugin.join("PLUGIN.md"),
        "---\nid: twice\nkind: plugin\ndescription: Declares a form once and registers it twice.\ncontributes:\n  forms:\n    - coin-split\n---\n",
    )
    .expect("manifest");
    fs::write(
        plugin.join("server/index.js"),
        "export default function (covel) {\n  covel.registerFormValidator(\"coin-split\", () => undefined);\n  covel.registerFormValidator(\"coin-split\", () => undefined);\n}\n",
    )
    .expect("entry");
    let loaded = covel_js::load_plugins(&[plugin], &covel_js::Limits::default());
    let d = &loaded[0].diagnostics[0];
    assert_eq!(d.code, Code::UndeclaredRegistration);
    assert!(
        d.message
            .starts_with("Duplicate registration: form `coin-split`")
            && d.message.contains("register it once"),
        "{}",
        d.message
    );
    assert_eq!((d.line, d.column), (Some(3), Some(9)), "the second call");
}

#[test]
fn registered_but_not_declared_fails_the_load() {
    let plugins = load_some(&["broken/undeclared-extension"]);
    let d = &plugins[0].diagnostics[0];
    assert_eq!(d.code, Code::UndeclaredExtension);
    assert!(plugins[0].providers().is_empty());
    // `  covel.provideExtension(` on line 2 of the entry: the call that has no declaration.
    assert_eq!(
        d.file.as_deref(),
        Some(std::path::Path::new("undeclared-extension/server/index.js"))
    );
    assert_eq!(
        (d.line, d.column),
        (Some(2), Some(9)),
        "points at the registration call"
    );
}

#[test]
fn a_missing_registration_points_at_its_declaration_and_an_extra_one_at_its_call() {
    let plugins = load_some(&[
        "broken/missing-hook",
        "broken/undeclared-tool",
        "broken/duplicate-extension",
    ]);
    let at = |p: &covel_js::LoadedPlugin| {
        let d = &p.diagnostics[0];
        (
            d.file.as_ref().map(|f| f.display().to_string()),
            d.line,
            d.column,
        )
    };
    assert_eq!(
        at(&plugins[0]),
        (Some("missing-hook/PLUGIN.md".into()), Some(7), Some(5)),
        "`    - event: TurnStart`"
    );
    // The call's column, not the engine's (it reports a position inside the arguments).
    assert_eq!(
        at(&plugins[1]),
        (
            Some("undeclared-tool/server/index.js".into()),
            Some(2),
            Some(9)
        )
    );
    assert_eq!(
        at(&plugins[2]),
        (
            Some("duplicate-extension/server/index.js".into()),
            Some(3),
            Some(9)
        ),
        "the second call"
    );
}

#[test]
fn registering_the_same_extension_twice_fails_the_load() {
    assert_eq!(
        load_some(&["broken/duplicate-extension"])[0].diagnostics[0].code,
        Code::DuplicateExtension
    );
}

#[test]
fn providing_an_unknown_point_or_a_non_function_handler_fails_the_load() {
    let plugins = load_some(&[
        "broken/provides-unknown-point",
        "broken/handler-not-a-function",
    ]);
    for p in &plugins {
        assert_eq!(p.diagnostics.len(), 1, "{:?}", p.diagnostics);
        assert_eq!(p.diagnostics[0].code, Code::InvalidExtension);
    }
}

#[test]
fn static_prompt_id_is_reserved_on_both_sides() {
    let plugins = load_some(&[
        "broken/declares-static-prompt",
        "broken/provides-static-prompt",
    ]);
    for p in &plugins {
        assert_eq!(
            p.diagnostics[0].code,
            Code::ReservedExtensionId,
            "{}",
            p.name
        );
    }
}

#[test]
fn a_non_empty_contributes_prompt_registers_the_static_prompt_provider() {
    let plugins = load_some(&["upstream-shaped/static-only"]);
    assert!(plugins[0].ok());
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    assert_eq!(result.calls.len(), 1);
    assert_eq!(&*result.calls[0].provider_id, "static-prompt");
    let segments = result.result.as_array().expect("segments");
    assert_eq!(segments.len(), 2);
    for seg in segments {
        assert_eq!(seg["audience"], "self");
        // The plugin ships a zh variant, so its static text depends on the locale: `turn`.
        assert_eq!(seg["volatility"], "turn");
        assert_eq!(seg["providerPluginId"], "static-only");
    }
}

#[test]
fn entry_defaults_to_server_index_js() {
    let plugins = load_some(&["runner/alpha"]);
    let package = plugins[0].package.as_ref().expect("valid");
    assert_eq!(package.manifest.entry.as_deref(), Some("server/index.js"));
    assert!(!package.manifest.entry_explicit);
    assert!(plugins[0].ok());
}

#[test]
fn one_bad_plugin_never_stops_the_others() {
    let plugins = load_some(&[
        "broken/entry-throws",
        "broken/entry-loops",
        "broken/bad-yaml",
        "runner/alpha",
        "runner/beta",
    ]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    let contents: Vec<&str> = result
        .result
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["content"].as_str())
        .collect();
    assert!(
        contents.contains(&"alpha") && contents.contains(&"beta"),
        "{contents:?}"
    );
    assert_eq!(plugins.iter().filter(|p| !p.ok()).count(), 3);
}

#[test]
fn registration_after_the_entry_settles_is_refused() {
    let plugins = load_some(&["runner/latecomer"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    assert_eq!(
        result.result[0]["content"],
        "plugin entry registration is closed"
    );
}

#[test]
fn upstream_shaped_plugins_load_and_their_providers_run() {
    let plugins = load("upstream-shaped");
    for p in &plugins {
        assert!(p.ok(), "{}: {:?}", p.name, p.diagnostics);
    }
    let quest = plugins
        .iter()
        .find(|p| p.name == "quest-tracker")
        .expect("fixture");
    let r = &quest.registrations;
    assert_eq!(r.tools, ["quest-update"]);
    assert_eq!(r.actions, ["reset-quests"]);
    assert_eq!(r.services, ["quests.query@1"]);
    assert_eq!(r.hooks, ["TurnStart:normal", "PostLLMResponse:post"]);
    assert_eq!(r.forms, ["quest-form"]);
    assert_eq!(r.wires, ["quest-voice"]);
    // Tools and hooks run in played turns; the others the studio lists and says it never runs.
    let kinds: Vec<&str> = r.not_run().iter().map(|(kind, _)| *kind).collect();
    assert_eq!(kinds, ["actions", "services", "forms", "wires"]);
    assert_eq!(
        r.not_run_note().as_deref(),
        Some(
            "registered only: the studio lists these actions, services, forms and wires but never \
             runs them (a player's command, a service request or a media request runs them in \
             Covel); tools and hooks run in played turns"
        )
    );
    assert_eq!(r.tool_specs[0].name, "quest-update");
    assert_eq!(r.hook_specs.len(), 2);
    assert_eq!(r.hook_specs[1].enforce, "post");
    assert!(
        quest
            .modules
            .iter()
            .any(|m| m.ends_with("server/tools/update.js")),
        "relative imports are tracked"
    );
    let static_only = plugins
        .iter()
        .find(|p| p.name == "static-only")
        .expect("fixture");
    assert_eq!(static_only.registrations.not_run_note(), None);
    let dice = plugins
        .iter()
        .find(|p| p.name == "dice-check")
        .expect("fixture");
    let runtimes: Vec<&str> = dice
        .package
        .as_ref()
        .expect("valid")
        .manifest
        .runtimes
        .iter()
        .map(|r| &*r.id)
        .collect();
    assert_eq!(runtimes, ["dice-check/recorder", "dice-check/roller"]);
    let summary = runner::run(
        PointId::UiSlot,
        json!({"slot": "session.summary@1", "previous": null, "events": []}),
        &providers(&plugins),
        &ExecutionContext::empty(),
        &RunOptions::default(),
    );
    assert_eq!(summary.result["entries"][0]["id"], "quest.active");
}

// ---- Combination modes ------------------------------------------------------------------------

#[test]
fn point_table_matches_the_seed_page() {
    let table: Vec<(PointId, Mode, u64, OnError)> = PointId::ALL
        .iter()
        .map(|p| {
            (
                *p,
                p.point().mode,
                p.point().timeout.as_millis() as u64,
                p.point().on_error,
            )
        })
        .collect();
    assert_eq!(
        table,
        vec![
            (PointId::PromptSegment, Mode::Collect, 500, OnError::Skip),
            (
                PointId::PromptHistoryTransform,
                Mode::Pipeline,
                500,
                OnError::Skip
            ),
            (PointId::UiSlot, Mode::Pipeline, 500, OnError::Skip),
            (PointId::MediaImageFlow, Mode::Single, 500, OnError::Skip),
            (
                PointId::SessionWorldContext,
                Mode::Single,
                500,
                OnError::FailTurn
            ),
            (PointId::HistoryCompact, Mode::Single, 60_000, OnError::Skip),
        ]
    );
    let slots: Vec<&str> = SlotId::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        slots,
        [
            "stage.backdrop@1",
            "stage.cast@1",
            "stage.choices@1",
            "character.visual@1",
            "session.summary@1",
            "stage.music@1"
        ]
    );
}

#[test]
fn collect_gathers_every_valid_output_and_skips_the_rest() {
    let plugins = load("runner");
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    assert!(result.error.is_none());
    insta::assert_json_snapshot!("collect_over_runner_fixtures", snapshot_of(&result));
}

#[test]
fn providers_run_by_order_then_plugin_id_then_id() {
    let plugins = load_some(&["runner/beta", "runner/alpha", "runner/early"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    let chain: Vec<String> = result
        .calls
        .iter()
        .map(|c| format!("{}/{}", c.plugin_id, c.provider_id))
        .collect();
    assert_eq!(
        chain,
        ["early/note", "alpha/forged", "alpha/note", "beta/note"]
    );
}

#[test]
fn collect_runs_different_plugins_at_once_and_one_plugins_calls_one_after_another() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("one core: plugins cannot run at once here, nothing to check");
        return;
    }
    let segment = |content: String| json!([{"id": "s", "content": content, "position": "system", "audience": "all", "volatility": "stable"}]);
    // Each of two plugins waits (at most 10 s) until both have started: only plugins that run
    // at the same time both see it.
    let started = Arc::new(AtomicUsize::new(0));
    let meets = |started: Arc<AtomicUsize>| {
        move |_: &runner::ProviderCall| {
            started.fetch_add(1, Ordering::SeqCst);
            let until = Instant::now() + Duration::from_secs(10);
            while started.load(Ordering::SeqCst) < 2 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(segment(format!(
                "met: {}",
                started.load(Ordering::SeqCst) >= 2
            )))
        }
    };
    // A third plugin has two providers on one engine: they must never overlap.
    let inside = Arc::new(AtomicUsize::new(0));
    let overlapped = Arc::new(AtomicUsize::new(0));
    let one_engine = {
        let (inside, overlapped) = (Arc::clone(&inside), Arc::clone(&overlapped));
        move |_: &runner::ProviderCall| {
            if inside.fetch_add(1, Ordering::SeqCst) > 0 {
                overlapped.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(20));
            inside.fetch_sub(1, Ordering::SeqCst);
            Ok(segment("alone".into()))
        }
    };
    let first = rust_provider("solo", PointId::PromptSegment, "a", 0, one_engine);
    let mut second = first.clone();
    std::sync::Arc::make_mut(&mut second.decl).id = "b".into();
    let providers = vec![
        rust_provider(
            "left",
            PointId::PromptSegment,
            "s",
            0,
            meets(Arc::clone(&started)),
        ),
        rust_provider(
            "right",
            PointId::PromptSegment,
            "s",
            0,
            meets(Arc::clone(&started)),
        ),
        first,
        second,
    ];
    let result = on_two_free_workers(|| run_segments(&providers));
    assert!(result.error.is_none(), "{:?}", result.error);
    let contents: Vec<&str> = result
        .result
        .as_array()
        .expect("segments")
        .iter()
        .filter_map(|s| s["content"].as_str())
        .collect();
    assert_eq!(
        contents,
        ["met: true", "met: true", "alone", "alone"],
        "chain order kept, both plugins met"
    );
    assert_eq!(
        overlapped.load(Ordering::SeqCst),
        0,
        "one engine's calls overlapped"
    );
}

#[test]
fn a_batch_runs_chains_of_different_engines_at_once_and_each_engines_calls_in_request_order() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("one core: chains cannot run at once here, nothing to check");
        return;
    }
    // `left` provides the backdrop and the cast (one engine), `right` the music. The backdrop
    // and the music wait (at most 10 s) until both have started: only chains that run at the
    // same time both see it. The cast must run after the backdrop, as one by one.
    let started = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let handler = |started: Arc<AtomicUsize>, log: Arc<Mutex<Vec<String>>>| {
        move |call: &runner::ProviderCall| {
            let slot = call.input["slot"].as_str().unwrap_or_default().to_string();
            let mut met = true;
            if slot != "stage.cast@1" {
                started.fetch_add(1, Ordering::SeqCst);
                let until = Instant::now() + Duration::from_secs(10);
                while started.load(Ordering::SeqCst) < 2 && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                met = started.load(Ordering::SeqCst) >= 2;
            }
            log.lock().expect("log").push(format!("{} met={met}", slot));
            Ok(Value::Null)
        }
    };
    let slot_provider = |plugin: &str, slot: SlotId, handler| {
        let mut provider = rust_provider(plugin, PointId::UiSlot, "view", 0, handler);
        Arc::make_mut(&mut provider.decl).slot = Some(slot);
        provider
    };
    let backdrop = slot_provider(
        "left",
        SlotId::StageBackdrop,
        handler(Arc::clone(&started), Arc::clone(&log)),
    );
    let mut cast = backdrop.clone();
    Arc::make_mut(&mut cast.decl).slot = Some(SlotId::StageCast);
    Arc::make_mut(&mut cast.decl).id = "cast".into();
    let music = slot_provider(
        "right",
        SlotId::StageMusic,
        handler(Arc::clone(&started), Arc::clone(&log)),
    );
    let providers = vec![backdrop, cast, music];
    let request = |slot: SlotId| runner::RunRequest {
        point: PointId::UiSlot,
        input: json!({"slot": slot.as_str(), "previous": null, "events": []}),
        options: RunOptions {
            slot: Some(slot),
            ..RunOptions::default()
        },
    };
    let order = [SlotId::StageBackdrop, SlotId::StageMusic, SlotId::StageCast];
    let results = on_two_free_workers(|| {
        runner::run_all(
            order.iter().map(|&slot| request(slot)).collect(),
            &providers,
            &ExecutionContext::empty(),
        )
    });
    let log = log.lock().expect("log").clone();
    assert!(
        log.contains(&"stage.backdrop@1 met=true".to_string()),
        "{log:?}"
    );
    assert!(
        log.contains(&"stage.music@1 met=true".to_string()),
        "{log:?}"
    );
    let at = |entry: &str| log.iter().position(|l| l.starts_with(entry));
    assert!(
        at("stage.backdrop@1") < at("stage.cast@1"),
        "left's calls in request order: {log:?}"
    );
    // The same results, in request order, as one run after another.
    let summary = |r: &runner::RunResult| {
        let calls: Vec<String> = r
            .calls
            .iter()
            .map(|c| format!("{}/{} {:?}", c.plugin_id, c.provider_id, c.outcome))
            .collect();
        (r.slot, r.result.clone(), calls, r.error.clone())
    };
    started.store(2, Ordering::SeqCst);
    let one_by_one: Vec<_> = order
        .iter()
        .map(|&slot| {
            let r = request(slot);
            runner::run(
                r.point,
                r.input,
                &providers,
                &ExecutionContext::empty(),
                &r.options,
            )
        })
        .collect();
    assert_eq!(
        results.iter().map(summary).collect::<Vec<_>>(),
        one_by_one.iter().map(summary).collect::<Vec<_>>()
    );
}

#[test]
fn plugin_ids_compare_by_utf16_code_units_not_locale() {
    let providers = vec![
        rust_provider("alpha", PointId::PromptSegment, "a", 0, |_| Ok(json!([]))),
        rust_provider("Zeta", PointId::PromptSegment, "a", 0, |_| Ok(json!([]))),
    ];
    let result = run_segments(&providers);
    let order: Vec<&str> = result.calls.iter().map(|c| &*c.plugin_id).collect();
    assert_eq!(order, ["Zeta", "alpha"]);
}

#[test]
fn segment_ids_are_unique_per_provider_and_a_repeat_skips_only_that_provider() {
    let segment = |id: &str, content: &str| json!({"id": id, "content": content, "position": "system", "audience": "all", "volatility": "stable"});
    let (a, b, c) = (
        segment("lore", "A"),
        segment("lore", "B"),
        segment("mood", "C"),
    );
    let repeats = rust_provider("twice", PointId::PromptSegment, "p", 0, move |_| {
        Ok(json!([a.clone(), c.clone(), b.clone()]))
    });
    // Two providers of one plugin may each use an id (the rule is per provider).
    let (d, e) = (segment("lore", "D"), segment("lore", "E"));
    let first = rust_provider("shared", PointId::PromptSegment, "one", 0, move |_| {
        Ok(json!([d.clone()]))
    });
    let second = rust_provider("shared", PointId::PromptSegment, "two", 0, move |_| {
        Ok(json!([e.clone()]))
    });
    // A long output is checked the same way (past 16 items, by a table instead of pairwise).
    let mut long: Vec<Value> = (0..19).map(|i| segment(&format!("s{i}"), "x")).collect();
    long.push(segment("s3", "again"));
    let many = rust_provider("many", PointId::PromptSegment, "p", 0, move |_| {
        Ok(Value::Array(long.clone()))
    });
    let result = run_segments(&[repeats, first, second, many]);
    assert_eq!(
        call_for(&result, "many", "p").message.as_deref(),
        Some(
            "does not match prompt.segment@1 output: at /19/id: `s3` is also the id of /3; segment ids are unique per provider (rename one, e.g. `s3-2`)"
        )
    );
    let twice = call_for(&result, "twice", "p");
    assert_eq!(twice.outcome, Outcome::InvalidOutput);
    assert_eq!(
        twice.message.as_deref(),
        Some(
            "does not match prompt.segment@1 output: at /2/id: `lore` is also the id of /0; segment ids are unique per provider (rename one, e.g. `lore-2`)"
        )
    );
    assert_eq!(call_for(&result, "shared", "one").outcome, Outcome::Success);
    assert_eq!(call_for(&result, "shared", "two").outcome, Outcome::Success);
    let contents: Vec<&str> = result
        .result
        .as_array()
        .expect("segments")
        .iter()
        .map(|s| s["content"].as_str().expect("content"))
        .collect();
    assert_eq!(
        contents,
        ["D", "E"],
        "the repeating provider contributes nothing"
    );
    assert!(
        result.error.is_none(),
        "prompt.segment@1 skips a broken provider"
    );
}

#[test]
fn pipeline_threads_each_valid_output_into_the_next_input() {
    let plugins = load_some(&["runner/pipes-a", "runner/pipes-b"]);
    let input = json!({"turnId": "t9", "messages": [
        {"id": "m1", "sessionId": "s", "turnId": "t1", "sourceType": "player", "role": "user", "content": "hello", "order": 1, "createdAt": "2026-01-01T00:00:00Z", "extra": "kept"}
    ]});
    let result = call(&plugins, PointId::PromptHistoryTransform, input);
    let message = &result.result["messages"][0];
    assert_eq!(
        message["content"], "HELLO",
        "the second provider saw the first one's output"
    );
    assert_eq!(
        message["metadata"]["seenInTurn"], "t9",
        "input-only fields survive the merge"
    );
    assert_eq!(message["extra"], "kept", "unknown message keys survive");
    assert_eq!(
        call_for(&result, "pipes-b", "broken").outcome,
        Outcome::InvalidOutput
    );
}

#[test]
fn pipeline_with_no_provider_returns_its_input() {
    let input = json!({"turnId": "t1", "messages": []});
    let result = call(&[], PointId::PromptHistoryTransform, input);
    assert_eq!(result.result, json!({"messages": []}));
    let slot = call(
        &[],
        PointId::UiSlot,
        json!({"slot": "stage.music@1", "previous": {"trackId": "x"}, "events": []}),
    );
    assert_eq!(
        slot.result,
        json!({"trackId": "x"}),
        "ui.slot@1 returns `previous`"
    );
}

/// A `ui.slot@1` provider in Rust for one slot, with its own handler.
fn slot_handler(
    plugin_id: &str,
    order: i64,
    slot: SlotId,
    handler: impl Fn(&runner::ProviderCall) -> Result<Value, String> + Send + Sync + 'static,
) -> runner::Provider {
    let mut provider = rust_provider(plugin_id, PointId::UiSlot, "view", order, handler);
    std::sync::Arc::make_mut(&mut provider.decl).slot = Some(slot);
    provider
}

#[test]
fn pipeline_answers_the_last_valid_output_when_every_provider_after_it_fails() {
    // The value a pipeline passes along moves from step to step (it is never copied): what the
    // run answers and what each provider sees must not change with that.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let watch = |seen: &std::sync::Arc<std::sync::Mutex<Vec<Value>>>| {
        let seen = std::sync::Arc::clone(seen);
        move |call: &runner::ProviderCall| {
            seen.lock()
                .expect("lock")
                .push(call.input["previous"].clone());
        }
    };
    let (first, second, third) = (watch(&seen), watch(&seen), watch(&seen));
    let providers = [
        slot_handler("a-first", 1, SlotId::StageMusic, move |call| {
            first(call);
            Ok(json!({"trackId": "first"}))
        }),
        slot_handler("b-throws", 2, SlotId::StageMusic, move |call| {
            second(call);
            Err("no track".into())
        }),
        slot_handler("c-invalid", 3, SlotId::StageMusic, move |call| {
            third(call);
            Ok(json!({"trackId": 7}))
        }),
    ];
    let result = runner::run(
        PointId::UiSlot,
        json!({"slot": "stage.music@1", "previous": {"trackId": "before"}, "events": []}),
        &providers,
        &ExecutionContext::empty(),
        &RunOptions::default(),
    );
    assert_eq!(result.result, json!({"trackId": "first"}));
    let outcomes: Vec<Outcome> = result.calls.iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Success, Outcome::Error, Outcome::InvalidOutput]
    );
    assert_eq!(
        *seen.lock().expect("lock"),
        [
            json!({"trackId": "before"}),
            json!({"trackId": "first"}),
            json!({"trackId": "first"})
        ],
        "a failed step leaves the next provider's input as it was"
    );

    // prompt.history-transform@1 answers the last successful output as the provider returned
    // it (its own extra fields, no `turnId` from the input), not the merged next input.
    let message = json!({"id": "m1", "sessionId": "s", "turnId": "t1", "sourceType": "player", "role": "user", "content": "hi", "order": 1, "createdAt": "2026-01-01T00:00:00Z"});
    let rewritten = {
        let message = message.clone();
        move |_: &runner::ProviderCall| Ok(json!({"messages": [message.clone()], "note": "kept"}))
    };
    let providers = [
        rust_provider(
            "a-rewrites",
            PointId::PromptHistoryTransform,
            "t",
            1,
            rewritten,
        ),
        rust_provider("b-throws", PointId::PromptHistoryTransform, "t", 2, |_| {
            Err("broken".into())
        }),
    ];
    let result = runner::run(
        PointId::PromptHistoryTransform,
        json!({"turnId": "t9", "messages": [message.clone()]}),
        &providers,
        &ExecutionContext::empty(),
        &RunOptions::default(),
    );
    assert_eq!(
        result.result,
        json!({"messages": [message], "note": "kept"})
    );
}

#[test]
fn ui_slot_keeps_the_previous_valid_value_when_a_provider_returns_an_invalid_one() {
    let plugins = load_some(&["runner/choices-a", "runner/choices-b"]);
    let result = call(
        &plugins,
        PointId::UiSlot,
        json!({"slot": "stage.choices@1", "previous": null, "events": []}),
    );
    assert_eq!(
        result.result,
        json!({"choices": [{"id": "go", "text": "Go north"}]})
    );
    let outcomes: Vec<Outcome> = result.calls.iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Success, Outcome::InvalidOutput, Outcome::Success]
    );
}

#[test]
fn single_with_several_providers_fails_before_any_provider_runs() {
    let plugins = load("runner-single");
    let result = call(&plugins, PointId::SessionWorldContext, json!({}));
    assert!(result.calls.is_empty(), "no provider ran");
    match result.error {
        Some(RunError::ConflictingProviders { providers, .. }) => {
            assert_eq!(providers, ["wc-one/world", "wc-two/world"])
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn single_with_no_provider_leaves_the_default_to_the_call_site() {
    let result = call(
        &[],
        PointId::HistoryCompact,
        json!({
            "messages": [], "existingSummaries": [], "contextWindow": 1000, "inputWindow": 1000,
            "summaryBudget": {"maxTokens": 128, "maxSegmentTokens": 128, "maxSegments": 8},
            "estimatedTokens": 0, "locale": "en"
        }),
    );
    assert_eq!(result.result, Value::Null);
    assert!(result.provided_by.is_none() && result.error.is_none());
}

#[test]
fn fail_turn_point_fails_the_whole_call_when_its_provider_fails() {
    let plugins = load("runner-failturn");
    let result = call(&plugins, PointId::SessionWorldContext, json!({}));
    match &result.error {
        Some(RunError::FailTurn {
            provider, message, ..
        }) => {
            assert_eq!(provider, "wc-broken/world");
            assert!(message.contains("store offline"), "{message}");
        }
        other => panic!("expected fail-turn, got {other:?}"),
    }
    assert_eq!(result.calls[0].outcome, Outcome::Error);
}

#[test]
fn skip_point_skips_a_failing_provider_and_continues() {
    let plugins = load_some(&["runner/thrower", "runner/beta"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    assert!(result.error.is_none());
    assert_eq!(call_for(&result, "thrower", "boom").outcome, Outcome::Error);
    assert_eq!(
        call_for(&result, "thrower", "boom").logs,
        ["[log] about to fail"],
        "console output reaches the trace"
    );
    assert_eq!(result.result.as_array().map(Vec::len), Some(1));
}

#[test]
fn input_is_validated_before_any_provider_runs() {
    let plugins = load_some(&["runner/alpha"]);
    let result = call(&plugins, PointId::PromptSegment, json!({"turnId": "t1"}));
    assert!(matches!(result.error, Some(RunError::InvalidInput { .. })));
    assert!(result.calls.is_empty());
}

#[test]
fn an_invalid_output_counts_as_the_providers_error() {
    let plugins = load_some(&["runner/misshapen"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    for id in ["wrong", "extra-key"] {
        let c = call_for(&result, "misshapen", id);
        assert_eq!(c.outcome, Outcome::InvalidOutput);
        assert_eq!(c.error_code.as_deref(), Some("output-validation"));
    }
}

#[test]
fn kernel_stamps_provider_plugin_id_over_a_forged_one() {
    let plugins = load_some(&["runner/alpha"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    let forged = result
        .result
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["id"] == "forged")
        .expect("segment");
    assert_eq!(forged["providerPluginId"], "alpha");
}

#[test]
fn image_flow_is_stamped_by_the_kernel_and_may_only_name_its_own_runtimes() {
    let plugins = load_some(&["runner/flows"]);
    let ok = call(&plugins, PointId::MediaImageFlow, json!({}));
    assert_eq!(ok.result["pluginId"], "flows");
    let mut thief = rust_provider("thief", PointId::MediaImageFlow, "images", 0, |_| {
        Ok(json!({"entryRuntimeId": "thief/run", "assetRuntimeIds": ["victim/asset"]}))
    });
    thief.runtime_ids = std::sync::Arc::new(vec!["thief/run".to_string()]);
    let foreign = vec![thief];
    let result = runner::run(
        PointId::MediaImageFlow,
        json!({}),
        &foreign,
        &ExecutionContext::empty(),
        &RunOptions::default(),
    );
    assert_eq!(result.calls[0].outcome, Outcome::InvalidOutput);
    assert!(
        result.calls[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("victim/asset")
    );
}

#[test]
fn image_flow_ownership_is_decided_on_path_components_and_registered_runtimes() {
    for (entry, why) in [
        ("thief/../victim/generate", "does not belong"),
        ("thief/./run", "does not belong"),
        ("thief/invented", "does not have"),
    ] {
        let mut provider =
            rust_provider("thief", PointId::MediaImageFlow, "images", 0, move |_| {
                Ok(json!({"entryRuntimeId": entry, "assetRuntimeIds": [entry]}))
            });
        provider.runtime_ids = std::sync::Arc::new(vec!["thief/run".to_string()]);
        let result = runner::run(
            PointId::MediaImageFlow,
            json!({}),
            &[provider],
            &ExecutionContext::empty(),
            &RunOptions::default(),
        );
        assert_eq!(result.calls[0].outcome, Outcome::InvalidOutput, "{entry}");
        assert!(
            result.calls[0]
                .message
                .as_deref()
                .unwrap_or_default()
                .contains(why),
            "{entry}: {:?}",
            result.calls[0].message
        );
    }
}

#[test]
fn a_cpu_loop_is_interrupted_at_its_deadline_and_the_runtime_answers_a_new_call() {
    // How long the interrupt takes is measured in `cargo bench` (runner: cpu_loop_interrupted).
    let plugins = load_some(&["runner/spinner"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    let spin = call_for(&result, "spinner", "spin");
    assert_eq!(spin.outcome, Outcome::Timeout);
    assert!(
        spin.message
            .as_deref()
            .is_some_and(|m| m.contains("500 ms")),
        "{:?}",
        spin.message
    );
    assert_eq!(
        call_for(&result, "spinner", "after").outcome,
        Outcome::Success,
        "the same runtime went on to its next provider"
    );
    // A new input: the memo cannot answer, so the interrupted runtime itself must run again.
    let again = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t2", "playerMessage": "Something new."}),
    );
    let after = call_for(&again, "spinner", "after");
    assert_eq!(
        after.outcome,
        Outcome::Success,
        "the runtime stays usable: {after:?}"
    );
    assert!(!after.cached, "answered by the runtime, not the memo");
    assert_eq!(again.result[0]["content"], "still answering");
}

// ---- The memo -------------------------------------------------------------------------------------

fn counted(result: &runner::RunResult, id: &str) -> (String, bool) {
    let record = call_for(result, "counter", id);
    let content = covel_tests::segment_content(result, id).unwrap_or_default();
    (content, record.cached)
}

#[test]
fn a_handler_whose_answer_changes_runs_every_time_instead_of_being_answered_from_the_memo() {
    // The memo answers only what running would answer (tests/suites/memo.rs has the cached
    // case): this handler counts its calls, so every identical call really runs.
    let plugins = load_some(&["runner-memo/counter"]);
    let runs: Vec<(String, bool)> = (0..3)
        .map(|_| {
            counted(
                &call(&plugins, PointId::PromptSegment, segment_input()),
                "count",
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("run 1 for I look around.".to_string(), false),
            ("run 2 for I look around.".to_string(), false),
            ("run 3 for I look around.".to_string(), false)
        ]
    );
    let other = call(
        &plugins,
        PointId::PromptSegment,
        json!({"turnId": "t1", "playerMessage": "I listen."}),
    );
    assert_eq!(
        counted(&other, "count"),
        ("run 4 for I listen.".to_string(), false),
        "a new input runs the handler"
    );
}

#[test]
fn a_failed_call_is_never_memoized() {
    let plugins = load_some(&["runner-memo/counter"]);
    let first = call(&plugins, PointId::PromptSegment, segment_input());
    let failed = call_for(&first, "counter", "flaky");
    assert_eq!(failed.outcome, Outcome::Error);
    assert!(!failed.cached);
    let retry = call(&plugins, PointId::PromptSegment, segment_input());
    let record = call_for(&retry, "counter", "flaky");
    assert_eq!(
        (record.outcome, record.cached),
        (Outcome::Success, false),
        "the same call ran again instead of replaying the failure"
    );
    assert_eq!(counted(&retry, "flaky").0, "run 2");
}

#[test]
fn a_promise_that_never_settles_times_out_and_the_runtime_stays_usable() {
    let plugins = load_some(&["runner/sleeper"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    assert_eq!(
        call_for(&result, "sleeper", "wait").outcome,
        Outcome::Timeout
    );
    assert_eq!(
        call_for(&result, "sleeper", "timer").outcome,
        Outcome::Success,
        "timers still fire"
    );
}

#[test]
fn a_handler_that_exhausts_memory_is_contained() {
    let plugins = load_some(&["runner/hog"]);
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    assert_eq!(
        call_for(&result, "hog", "eat").outcome,
        Outcome::OutOfMemory
    );
    assert_eq!(call_for(&result, "hog", "small").outcome, Outcome::Success);
}

#[test]
fn every_call_leaves_a_trace_entry_with_outcome_code_and_reason() {
    let plugins = load("runner");
    let result = call(&plugins, PointId::PromptSegment, segment_input());
    let expected_calls = providers(&plugins)
        .iter()
        .filter(|p| p.decl.point == PointId::PromptSegment)
        .count();
    assert_eq!(result.calls.len(), expected_calls);
    for c in &result.calls {
        if c.outcome == Outcome::Success {
            assert!(c.error_code.is_none() && c.message.is_none());
        } else {
            assert!(
                c.error_code.is_some() && c.message.as_deref().is_some_and(|m| !m.is_empty()),
                "{c:?}"
            );
        }
    }
}

/// An engine answering every call from its memo: the same shared value each time, `cached`.
struct MemoAnswers {
    answer: std::sync::Arc<Value>,
}

impl runner::Invoker for MemoAnswers {
    fn call(&self, _: &runner::ProviderCall) -> runner::CallReport {
        runner::CallReport {
            result: Ok(std::sync::Arc::clone(&self.answer)),
            duration: std::time::Duration::from_micros(1),
            logs: Vec::new(),
            notes: Vec::new(),
            cached: true,
            ran: Some(std::time::Duration::from_millis(2)),
            not_cached: None,
        }
    }
}

/// A provider whose every call is answered from the memo with `answer` (kept shared here too).
fn answering(
    plugin: &str,
    point: PointId,
    answer: Value,
) -> (runner::Provider, std::sync::Arc<Value>) {
    let answer = std::sync::Arc::new(answer);
    let mut provider = rust_provider(plugin, point, "memo", 0, |_| Ok(Value::Null));
    provider.invoker = std::sync::Arc::new(MemoAnswers {
        answer: std::sync::Arc::clone(&answer),
    });
    (provider, answer)
}

#[test]
fn a_memo_answer_checked_once_is_not_checked_or_copied_again_and_reads_the_same() {
    // What the plugin wrote as provenance is overwritten, whichever way the segments are read.
    let answer = json!([
        {"id": "a", "content": "Alpha.", "position": "system", "audience": "all",
         "volatility": "stable", "providerPluginId": "someone-else"},
        {"id": "b", "content": "Beta.", "position": {"depth": 2}, "audience": "story",
         "volatility": "turn", "role": "user", "order": 3},
    ]);
    let (memo, shared_answer) = answering("memo", PointId::PromptSegment, answer.clone());
    let fresh = rust_provider("memo", PointId::PromptSegment, "memo", 0, move |_| {
        Ok(answer.clone())
    });
    let ran = run_segments(std::slice::from_ref(&fresh));
    let expected: Vec<covel_kernel::prompt::Segment> = ran
        .result
        .as_array()
        .expect("segments")
        .iter()
        .filter_map(covel_kernel::prompt::Segment::parse)
        .collect();
    assert_eq!(expected.len(), 2);
    assert!(expected.iter().all(|s| &*s.provider_plugin_id == "memo"));
    assert!(fresh.checked.is_empty(), "a call that ran is not kept");
    let shared = RunOptions {
        shared_segments: true,
        ..RunOptions::default()
    };
    let ctx = ExecutionContext::empty();
    for round in 0..3 {
        let concatenated = run_segments(std::slice::from_ref(&memo));
        assert_eq!(concatenated.result, ran.result, "round {round}");
        let run = runner::run(
            PointId::PromptSegment,
            segment_input(),
            std::slice::from_ref(&memo),
            &ctx,
            &shared,
        );
        assert_eq!(run.result, Value::Null, "shared parts replace the result");
        assert_eq!(
            covel_kernel::prompt::Segment::parse_parts(&run.parts),
            expected,
            "round {round}"
        );
        assert!(
            std::sync::Arc::ptr_eq(&run.parts[0].output, &shared_answer),
            "the memo's answer reaches the assembly without a copy"
        );
    }
    // One entry per way of reading it (stamped for a concatenated run, as is for a shared one).
    assert_eq!(memo.checked.len(), 2);
}

#[test]
fn an_invalid_memo_answer_is_rejected_every_time_and_never_kept() {
    let (memo, _) = answering(
        "memo",
        PointId::PromptSegment,
        json!([{"id": "a", "content": 7}]),
    );
    for _ in 0..2 {
        let result = run_segments(std::slice::from_ref(&memo));
        assert_eq!(
            call_for(&result, "memo", "memo").outcome,
            Outcome::InvalidOutput
        );
    }
    assert!(memo.checked.is_empty());
}

#[test]
fn a_memo_answer_that_fails_a_provenance_check_fails_it_every_time() {
    // A world context naming a runtime its provider does not own is refused by attribution.
    let (memo, _) = answering(
        "memo",
        PointId::SessionWorldContext,
        json!({"dimensionRecovery": {"editorRuntimeId": "other/editor", "trackerRuntimeId": "other/tracker"}}),
    );
    for _ in 0..2 {
        let result = runner::run(
            PointId::SessionWorldContext,
            json!({}),
            std::slice::from_ref(&memo),
            &ExecutionContext::empty(),
            &RunOptions::default(),
        );
        let record = call_for(&result, "memo", "memo");
        assert_eq!(record.outcome, Outcome::InvalidOutput, "{record:?}");
        assert!(
            record
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with("Dimension recovery runtime is not owned")),
            "refused by the provenance check: {record:?}"
        );
    }
    assert!(memo.checked.is_empty());
}

// ---- Contract versions and compatibility ------------------------------------------------------

#[test]
fn a_retired_contract_version_fails_with_the_current_one_named() {
    let plugins = load_some(&["broken/retired-compact"]);
    let d = &plugins[0].diagnostics[0];
    assert_eq!(d.code, Code::RetiredContract);
    assert!(d.message.contains("history.compact@2"), "{}", d.message);
    assert_eq!((d.line, d.column), (Some(7), Some(14)));
}

#[test]
fn stage_dialogue_is_not_a_kernel_slot() {
    assert!(SlotId::parse("stage.dialogue@1").is_none());
    let plugins = load_some(&["broken/retired-dialogue-slot"]);
    assert!(plugins[0].diagnostics[0].message.contains("story segments"));
}

#[test]
fn conflicts_cannot_name_a_kernel_point_or_slot() {
    let plugins = load_some(&[
        "broken/conflicts-kernel-point",
        "broken/conflicts-kernel-slot",
    ]);
    for p in &plugins {
        assert_eq!(p.diagnostics[0].code, Code::InvalidConflict, "{}", p.name);
    }
}

// ---- The world, the handler context and the slot host, in the kernel ---------------------------
// These rules live in the kernel (`world`, `context`, `slot_host`) and are checked here with
// Rust providers and no JavaScript engine.

fn kernel_session(text: &str) -> covel_kernel::session::Session {
    covel_kernel::session::parse_session(text, std::path::Path::new("session.yaml"))
        .expect("the session parses")
}

fn manifest(text: &str, id: &str) -> covel_kernel::manifest::Manifest {
    let (manifest, diagnostics) =
        covel_kernel::manifest::parse_plugin_md(text, std::path::Path::new("PLUGIN.md"), id);
    manifest.unwrap_or_else(|| panic!("{id} parses: {diagnostics:?}"))
}

const DIMENSIONS_SESSION: &str = r#"
id: s1
locale: fr-CA
world:
  dimensions:
    trust: { name: Trust, initial: 5 }
  characters: [{ id: mara, type: player }]
pluginData:
  - { pluginId: dims, namespace: _dimensions, key: trust, value: { definition: { name: Trust, schema: { type: number } }, value: 7, version: 3 } }
  - { pluginId: dims, namespace: _hidden.notes, key: secret, value: "the butler" }
  - { pluginId: dims, namespace: notes, key: b, value: 2, createdAt: "2024-01-02" }
  - { pluginId: dims, namespace: notes, key: a, value: 1, createdAt: "2024-01-01" }
  - { pluginId: other, namespace: notes, key: theirs, value: 3 }
settings:
  dims: { mood: tense }
"#;

const DIMS_PLUGIN: &str = "---\nid: dims\nkind: plugin\ndescription: Dimensions.\nprovides: [world.dimensions@1]\ncontributes:\n  settings:\n    - { key: mood, type: text, default: calm, label: Mood }\n    - { key: verbosity, type: integer, default: 2, label: Verbosity }\n---\n";

#[test]
fn the_world_view_carries_the_single_dimension_providers_snapshot_and_never_the_initial_values() {
    let session = kernel_session(DIMENSIONS_SESSION);
    let one = covel_kernel::world::world_view(
        &session.world,
        &session.plugin_data,
        &["dims".to_string()],
    );
    assert_eq!(
        one["dimensions"]["trust"],
        json!({"name": "Trust", "schema": {"type": "number"}, "value": 7, "version": 3})
    );
    assert_eq!(one["dimensionProviderPluginId"], "dims");
    for providers in [vec![], vec!["dims".to_string(), "dims-two".to_string()]] {
        let view =
            covel_kernel::world::world_view(&session.world, &session.plugin_data, &providers);
        assert_eq!(
            view["dimensions"],
            json!({}),
            "no fallback to the author's initial values"
        );
        assert!(view.get("dimensionProviderPluginId").is_none());
    }
}

#[test]
fn a_world_with_dimensions_needs_exactly_one_enabled_dimension_provider() {
    let session = kernel_session(DIMENSIONS_SESSION);
    let providers = covel_kernel::world::dimension_providers([&manifest(DIMS_PLUGIN, "dims")]);
    assert_eq!(providers, ["dims"]);
    assert_eq!(
        covel_kernel::world::dimension_rule_violation(&session.world, &providers),
        None
    );
    let none = covel_kernel::world::dimension_rule_violation(&session.world, &[])
        .expect("none breaks the rule");
    assert!(none.contains("none is enabled"), "{none}");
    let two =
        covel_kernel::world::dimension_rule_violation(&session.world, &["a".into(), "b".into()])
            .expect("two break it");
    assert!(two.contains("2 are enabled (a, b)"), "{two}");
    assert_eq!(
        covel_kernel::world::required_contracts(&session.world),
        ["world.dimensions@1"]
    );
    let plain = kernel_session("id: s2\n");
    assert_eq!(
        covel_kernel::world::dimension_rule_violation(&plain.world, &[]),
        None,
        "no dimensions, no rule"
    );
}

#[test]
fn the_handler_context_merges_settings_reads_only_own_visible_data_and_the_locales_messages() {
    let session = kernel_session(DIMENSIONS_SESSION);
    let dims = manifest(DIMS_PLUGIN, "dims");
    let execution = ExecutionContext::new(
        SessionView::from_session(&session, [&dims], &["dims".to_string()]),
        Some("turn-1".into()),
    );
    let messages: std::collections::BTreeMap<String, serde_json::Map<String, Value>> =
        [("fr", "Bonjour"), ("en", "Hello")]
            .into_iter()
            .map(|(tag, text)| {
                (
                    tag.to_string(),
                    json!({"hello": text})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                )
            })
            .collect();
    let ctx = serde_json::to_value(execution.view.handler_context("dims", &messages))
        .expect("serializes");
    assert_eq!(ctx["sessionId"], "s1");
    assert_eq!(
        ctx["settings"],
        json!({"mood": "tense", "verbosity": 2}),
        "session settings over declared defaults"
    );
    assert_eq!(
        ctx["messages"],
        json!({"hello": "Bonjour"}),
        "fr-CA reads fr"
    );
    assert_eq!(ctx["world"]["dimensionProviderPluginId"], "dims");
    let namespaces: Vec<&str> = ctx["pluginData"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["namespace"].as_str())
        .collect();
    assert_eq!(
        namespaces,
        ["notes", "_dimensions"],
        "own data only, hidden namespaces left out, in creation order"
    );
    let notes: Vec<&str> = ctx["pluginData"][0]["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["key"].as_str())
        .collect();
    assert_eq!(notes, ["a", "b"], "rows in creation order");
    assert!(
        ctx["pluginData"][0]["rows"][0].get("pluginId").is_none(),
        "no storage identifier fields"
    );
}

#[test]
fn a_rust_world_context_provider_reads_the_world_view_it_is_given() {
    let session = kernel_session(DIMENSIONS_SESSION);
    let execution = std::sync::Arc::new(ExecutionContext::new(
        SessionView::from_session(&session, [], &["dims".to_string()]),
        None,
    ));
    let provider = rust_provider("dims", PointId::SessionWorldContext, "ctx", 0, |call| {
        Ok(json!({"dimensions": call.context.view.world["dimensions"].clone()}))
    });
    let result = runner::run(
        PointId::SessionWorldContext,
        json!({}),
        &[provider],
        &execution,
        &RunOptions::default(),
    );
    assert_eq!(result.result["dimensions"]["trust"]["value"], 7);
    assert_eq!(
        result.result["dimensionProviderPluginId"], "dims",
        "provenance stamped by the kernel"
    );
}

fn slot_provider(
    plugin: &str,
    id: &str,
    slot: SlotId,
    watch: &[&str],
    preview: &[&str],
    value: Value,
) -> runner::Provider {
    let mut provider = rust_provider(plugin, PointId::UiSlot, id, 0, move |call| {
        let events = call.input["events"].as_array().map_or(0, Vec::len);
        Ok(if events == 0 {
            value.clone()
        } else {
            json!({"sceneId": "preview", "name": format!("{events} events")})
        })
    });
    std::sync::Arc::make_mut(&mut provider.decl).slot = Some(slot);
    std::sync::Arc::make_mut(&mut provider.decl).watch =
        watch.iter().map(|w| w.to_string()).collect();
    std::sync::Arc::make_mut(&mut provider.decl).preview =
        preview.iter().map(|p| p.to_string()).collect();
    provider
}

#[test]
fn the_slot_host_reprojects_only_what_a_trigger_affects_and_reports_only_new_revisions() {
    use covel_kernel::slot_host::{SlotHost, Trigger, project};
    let providers = vec![slot_provider(
        "stage",
        "backdrop",
        SlotId::StageBackdrop,
        &["scene"],
        &["scene.set"],
        json!({"sceneId": "harbour", "name": "The Harbour"}),
    )];
    let execution = ExecutionContext::empty();
    let projector = |slots: &[SlotId], events: &[Value], _turn: Option<&str>| {
        project(&providers, &execution, slots, events)
    };
    let mut host = SlotHost::default();
    let first = host.apply(&providers, &projector, &Trigger::All);
    assert!(
        first
            .iter()
            .any(|c| c.slot == SlotId::StageBackdrop && c.value["name"] == "The Harbour")
    );
    assert!(
        host.apply(&providers, &projector, &Trigger::All).is_empty(),
        "same revisions, no news"
    );
    let own = Trigger::PluginData {
        plugin_id: "stage".into(),
        namespaces: vec!["scene".into()],
    };
    assert_eq!(
        host.affected(&providers, &own)
            .into_iter()
            .collect::<Vec<_>>(),
        [SlotId::StageBackdrop]
    );
    let foreign = Trigger::PluginData {
        plugin_id: "other".into(),
        namespaces: vec!["scene".into()],
    };
    assert!(
        host.affected(&providers, &foreign).is_empty(),
        "a watched namespace is the provider's own"
    );
    let event = Trigger::EventPreviewed {
        turn_id: "t1".into(),
        topic: "scene.set".into(),
        data: json!({}),
        plugin_id: None,
    };
    let previews = host.apply(&providers, &projector, &event);
    assert_eq!(previews.len(), 1);
    assert_eq!(previews[0].preview_turn.as_deref(), Some("t1"));
    let committed = host
        .values()
        .into_iter()
        .find(|v| v.slot == SlotId::StageBackdrop)
        .expect("committed");
    assert_eq!(
        committed.value["name"], "The Harbour",
        "previews never touch the committed value"
    );
    host.apply(
        &providers,
        &projector,
        &Trigger::TurnEnded {
            turn_id: "t1".into(),
        },
    );
    assert!(host.events("t1").is_empty(), "previews end with their turn");
}
