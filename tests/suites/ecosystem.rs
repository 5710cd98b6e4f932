//! Real plugins as the ecosystem writes them: TypeScript module graphs, the genuine zod 4, the
//! whole SDK, the pure Node built-ins, host-internal imports refused by name, locale variants
//! without segment ids, template variables, and row-shaped `pluginData` reads flagged.

use covel_js::Limits;
use covel_kernel::contract::PointId;
use covel_kernel::resolver::RejectionCode;
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::{call, diagnostics_of, fixture, load_some};
use serde_json::{Value, json};

fn segments() -> Value {
    json!({"turnId": "t", "playerMessage": ""})
}

/// The content of one segment a plugin's providers returned.
fn content_of(plugin: &str, segment: &str) -> String {
    let plugins = load_some(&[&format!("ecosystem/{plugin}")]);
    assert!(
        plugins[0].ok(),
        "{plugin} loads: {:?}",
        plugins[0].diagnostics
    );
    let result = call(&plugins, PointId::PromptSegment, segments());
    assert!(
        result.calls.iter().all(|c| c.message.is_none()),
        "{:?}",
        result.calls
    );
    let found = result
        .result
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["id"] == segment);
    found
        .and_then(|s| s["content"].as_str())
        .unwrap_or_else(|| panic!("{plugin} returns {segment}: {}", result.result))
        .to_string()
}

#[test]
fn typescript_modules_load_as_node_type_stripping_runs_them() {
    let text = content_of("ts-graph", "strategy");
    assert_eq!(
        text, "strategy:calm (0 characters) from index.ts",
        "types erased, `.ts` imports followed, import.meta.url inside the plugin"
    );
}

#[test]
fn typescript_that_strip_only_mode_refuses_names_the_construct_at_its_ts_position() {
    let plugins = load_some(&["ecosystem/ts-enum"]);
    insta::assert_json_snapshot!(diagnostics_of(&plugins));
}

#[test]
fn zod_is_the_genuine_package_and_its_schemas_accept_and_reject() {
    let verdicts = content_of("zod-schemas", "verdicts");
    let failed: Vec<&str> = verdicts.lines().filter(|l| !l.starts_with("ok ")).collect();
    assert!(failed.is_empty(), "every zod check holds: {failed:?}");
    assert_eq!(verdicts.lines().count(), 11);
    let schema: Value =
        serde_json::from_str(&content_of("zod-schemas", "json-schema")).expect("json");
    assert_eq!(
        schema["properties"]["query"],
        json!({"type": "string", "description": "What to look up"}),
        "z.toJSONSchema of the facade's z"
    );
    assert_eq!(schema["additionalProperties"], json!(false));
}

#[test]
fn keys_from_data_stay_own_keys_in_what_the_sdk_copies_never_the_prototype() {
    let text = content_of("own-keys", "own-keys");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "resolveI18nDeep: own __proto__ true, prototype untouched true, polluted false, keys __proto__,constructor,plain",
            "compactRecord: own __proto__ true, prototype untouched true, polluted false, keys __proto__,constructor,plain",
        ]
    );
}

#[test]
fn node_builtins_hash_and_resolve_as_node_does() {
    let text = content_of("node-builtins", "builtins");
    // Digests as Node computes them: `node -e 'crypto.createHash("sha256").update("covel").digest("hex")'`.
    let expected = [
        "sha256 hex 5a15fcf0b91df9fdc19d3d675d397fd4f824f88e069a1aabfc24694648d5a92a",
        "sha1 base64 PaBtbhsvI+FDeAKf14a3pUDRRUM=",
        "md5 hex 795ea4579596c730ba96c96097dad111",
        "uuid v4 true",
        "randomInt in range true",
        "getRandomValues 8",
        "global crypto function",
        "module dir server",
        "url round trip true",
        "relative url true",
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn refused_imports_name_the_importing_module_its_line_and_every_missing_name() {
    let plugins = load_some(&["ecosystem/host-internal", "ecosystem/missing-sdk-names"]);
    insta::assert_json_snapshot!(diagnostics_of(&plugins));
}

/// The SDK's internal modules (its host bridge, its locale module) serve the SDK's entries only: a
/// plugin importing one is refused, pointed at the SDK's root entry.
#[test]
fn modules_internal_to_the_sdk_are_refused_to_plugin_code() {
    let plugins = load_some(&["ecosystem/sdk-internals"]);
    let diagnostics = diagnostics_of(&plugins);
    let text = diagnostics.to_string();
    assert!(
        text.contains("covel:sdk-locale is internal to the SDK"),
        "{text}"
    );
    assert!(
        text.contains("index.js"),
        "the importing file is named: {text}"
    );
}

#[test]
fn every_upstream_sdk_export_exists() {
    let inventory: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("sdk/upstream-exports.json")).expect("inventory"),
    )
    .expect("json");
    let ours: Value = serde_json::from_str(&content_of("sdk-inventory", "exports")).expect("json");
    let mut missing = Vec::new();
    for (entry, names) in inventory["entries"].as_object().expect("entries") {
        for name in names.as_array().expect("names") {
            let has = ours[entry]
                .as_array()
                .is_some_and(|exported| exported.contains(name));
            if !has {
                missing.push(format!("{entry}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "SDK exports upstream has and the studio lacks: {missing:?}"
    );
}

/// The resolver's rejection of `plugin`.
fn rejection<'a>(
    ws: &'a Workspace,
    plugin: &str,
    why: &str,
) -> &'a covel_kernel::resolver::Rejection {
    ws.resolution
        .rejected
        .iter()
        .find(|r| &*r.plugin == plugin)
        .expect(why)
}

#[test]
fn a_provider_that_failed_to_load_is_named_by_the_plugin_that_needs_it() {
    let ws =
        Workspace::open(&fixture("ecosystem-resolver"), None, &Limits::default()).expect("opens");
    let uses = rejection(&ws, "uses-world-ir", "uses-world-ir is rejected");
    assert_eq!(uses.code, RejectionCode::MissingProvider);
    assert!(
        uses.message.contains(
            "`world-ir` provides `world-ir-provider@1` but failed to load ([entry-syntax]"
        ),
        "{}",
        uses.message
    );
    let failed = rejection(&ws, "world-ir", "world-ir is reported");
    assert_eq!(failed.code, RejectionCode::LoadFailed);
    assert_eq!(failed.load_code.as_deref(), Some("entry-syntax"));
}

#[test]
fn a_provider_whose_manifest_failed_its_checks_is_named_too() {
    let ws =
        Workspace::open(&fixture("ecosystem-resolver"), None, &Limits::default()).expect("opens");
    let uses = rejection(&ws, "uses-old-slot", "uses-old-slot is rejected");
    assert!(
        uses.message.contains(
            "`old-slot` provides `speaker-names@1` but failed to load ([retired-contract]"
        ),
        "{}",
        uses.message
    );
}

#[test]
fn a_requested_plugin_with_a_kernel_conflict_is_invalid_conflict_for_the_resolver_too() {
    let ws = Workspace::open(&fixture("broken"), None, &Limits::default()).expect("opens");
    let rejection = rejection(&ws, "conflicts-kernel-point", "reported");
    assert_eq!(rejection.code, RejectionCode::InvalidConflict);
}

#[test]
fn a_chinese_session_reads_the_variant_body_and_static_prompt_with_variables_filled() {
    let session = fixture("ecosystem/zh.session.yaml");
    let ws =
        Workspace::open(&fixture("ecosystem"), Some(&session), &Limits::default()).expect("opens");
    let preview = ws.preview(&RuntimeTarget::Plugin("narrator-zh".into()));
    let body = preview
        .prompt
        .system
        .blocks
        .iter()
        .find(|b| format!("{:?}", b.kind) == "Body")
        .expect("a body block");
    assert_eq!(body.text, "你用第二人称讲述灰烬港。标签：海港, 雾。");
    let statics: Vec<(&str, &str)> = preview
        .segments
        .iter()
        .filter(|s| &*s.plugin == "narrator-zh")
        .map(|s| (&*s.id, format!("{:?}", s.volatility)))
        .map(|(id, v)| (id, if v == "Turn" { "turn" } else { "other" }))
        .collect();
    assert_eq!(
        statics,
        [("names", "turn"), ("style", "turn")],
        "a plugin with a variant ships turn-volatile static segments"
    );
    let turn_context = &preview.prompt.turn_context;
    assert!(
        turn_context.contains("段落要短。") && turn_context.contains("台词前先写说话人。"),
        "{turn_context}"
    );
}

#[test]
fn an_english_session_reads_the_canonical_body_with_its_setting_default() {
    let ws = Workspace::open(&fixture("ecosystem"), None, &Limits::default()).expect("opens");
    let preview = ws.preview(&RuntimeTarget::Plugin("narrator-zh".into()));
    let body = preview
        .prompt
        .system
        .blocks
        .iter()
        .find(|b| format!("{:?}", b.kind) == "Body")
        .expect("a body block");
    assert_eq!(
        body.text, "You narrate  in the second person. Tags: .",
        "no world record: empty; the declared default fills the setting"
    );
}

#[test]
fn row_shaped_plugin_data_reads_are_flagged_with_file_line_and_fix() {
    let plugins = load_some(&["ecosystem/row-reads"]);
    assert!(plugins[0].ok(), "a hint does not stop the plugin");
    let hints: Vec<String> = plugins[0].hints.iter().map(ToString::to_string).collect();
    insta::assert_json_snapshot!(hints);
}

#[test]
fn compaction_with_no_active_provider_says_so_instead_of_nothing_to_compact() {
    let session = fixture("ecosystem/zh.session.yaml");
    let mut ws =
        Workspace::open(&fixture("ecosystem"), Some(&session), &Limits::default()).expect("opens");
    let options = covel_studio::compaction::CompactionOptions {
        force: true,
        output: None,
    };
    let run = ws.compact(
        "turn-1",
        "system",
        &options,
        &mut covel_kernel::compaction::FailureCounter::default(),
    );
    assert!(run.verdict.is_none());
    assert!(
        run.not_compacted_because.as_deref().is_some_and(
            |w| w.contains("no active plugin of this session provides history.compact@2")
        ),
        "{:?}",
        run.not_compacted_because
    );
}

#[test]
fn an_inactive_plugin_runtime_cannot_be_previewed_and_says_why() {
    let ws =
        Workspace::open(&fixture("ecosystem-resolver"), None, &Limits::default()).expect("opens");
    let why = ws
        .runtime_unavailable(&RuntimeTarget::Plugin("world-ir".into()))
        .expect("world-ir is not active");
    assert!(why.contains("failed to load"), "{why}");
    assert!(
        ws.runtime_unavailable(&RuntimeTarget::Plugin("nobody".into()))
            .is_some_and(|w| w.contains("no plugin `nobody`"))
    );
}

#[test]
fn the_web_platform_globals_behave_as_browsers_and_node_give_them() {
    let text = content_of("web-globals", "web-globals");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "abort: true AbortError heard 2",
            "throwIfAborted: AbortError",
            "reason: enough",
            "static abort: true AbortError",
            "any: true first",
            "timeout: true TimeoutError",
            "timeout(Infinity): TypeError",
            "new AbortSignal(): TypeError",
            "instanceof: true",
            "encode: Uint8Array 18",
            "round trip: true",
            "encodeInto: 6 7",
            "lone surrogate: 239,191,189",
            "invalid: \"a\u{fffd}b\"",
            "fatal: TypeError",
            "bom: hi",
            "stream: |€",
            "latin1: RangeError",
            "16 MiB decoded: 16777216",
        ]
    );
}

/// Upstream's bundled plugins import SDK names from its workspace packages (`@covel/tools` in
/// npc-graph, world-init and world-time; `@covel/shared` in world-time): they load, and each
/// import is a note pointing a community plugin at the SDK.
#[test]
fn workspace_packages_serve_the_sdk_names_bundled_plugins_import_with_a_note() {
    assert_eq!(
        content_of("workspace-packages", "clock"),
        "World time (1 pending)"
    );
    let plugins = load_some(&["ecosystem/workspace-packages"]);
    let notes: Vec<(&str, Option<u32>)> = plugins[0]
        .hints
        .iter()
        .map(|h| (h.code.as_str(), h.line))
        .collect();
    assert_eq!(
        notes,
        [
            ("workspace-package-import", Some(1)),
            ("workspace-package-import", Some(2))
        ]
    );
    assert!(
        plugins[0].hints[0]
            .message
            .contains("imports these names from `@covel/plugin-handlers-utils`"),
        "{}",
        plugins[0].hints[0].message
    );
}

/// A name the thin workspace modules do not serve stays an import error naming the module and
/// the name.
#[test]
fn a_workspace_package_name_that_is_not_served_is_an_import_error_naming_module_and_name() {
    let plugins = load_some(&["ecosystem/workspace-unserved"]);
    assert!(!plugins[0].ok());
    let text = diagnostics_of(&plugins).to_string();
    assert!(text.contains("import-unavailable"), "{text}");
    assert!(
        text.contains("@covel/shared") && text.contains("`DIMENSION_KEYS`"),
        "{text}"
    );
    assert!(
        !text.contains("`resolveI18nDeep`"),
        "a served name is not listed: {text}"
    );
}

/// `Intl` (ICU4X, loaded on first use) and `structuredClone` answer as Node does: every line
/// below is Node's answer for the same script, except the first (before first use the globals
/// are getters that load their module: a plugin that never touches them pays nothing) and the
/// two options the sandbox refuses by name (currency formatting, time zones other than UTC).
#[test]
fn intl_and_structured_clone_answer_as_node_does() {
    let text = content_of("intl-globals", "intl-globals");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "not loaded yet: function function",
            "words en: The|cat's|hat|3|times",
            "words zh: 我|喜欢|吃|苹果",
            "graphemes: 0,2,6",
            "containing: world 6 undefined",
            "sentences: 2",
            "segmenter options: {\"locale\":\"zh-Hans-CN\",\"granularity\":\"word\"}",
            "bad granularity: RangeError",
            "bad locale: RangeError",
            "collator: aAbB",
            "numeric: item 2,item 10",
            "base: 0",
            "pinyin: 阿爸妈",
            "localeCompare: -1 0",
            "number en: 1,234,567.891",
            "number zh: 1,234.50",
            "no grouping: 1235",
            "percent: 26%",
            "currency: RangeError",
            "plural en: other,one,other",
            "ordinal en: one,two,few,other",
            "plural zh: other",
            "date en: December 7, 2026",
            "date zh: 2026年12月7日",
            "time zone: RangeError",
            "clone kinds: true true gi true 3 true",
            "clone refs: true true true",
            "clone function: DataCloneError",
            "clone instance: {\"x\":1} true",
        ]
    );
}

/// The globals the sandbox loads on first use (`URL`, `AbortController`, `TextEncoder`,
/// `structuredClone`, `Intl`, …) are read, written, deleted and enumerated as Node's are: every
/// line below is Node's answer for the same script. Until a plugin reads one it is an accessor
/// whose getter and setter are one bound function, so a plugin that never touches them pays only
/// for those.
#[test]
fn globals_loaded_on_first_use_read_write_delete_and_enumerate_as_in_node() {
    let text = content_of("lazy-globals", "lazy-globals");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "in globalThis: true",
            "own names: true",
            "Object.keys: structuredClone",
            "for-in: structuredClone",
            "written before read: mine data w=true e=false c=true",
            "delete before read: true undefined false",
            "typeof: function function function object",
            "after first read: data w=true e=false c=true",
            "same value: true true",
            "works: h.test 2 1",
            "assigned after read: replaced data w=true e=false c=true",
        ]
    );
}

/// Typed arrays, `WeakRef` and `FinalizationRegistry`, `DOMException` with `atob` and `btoa`,
/// `Date`, `Map` and `Set` (with `WeakMap` and `WeakSet`) and `performance` are added to a
/// plugin's context on first use (crates/js/src/intrinsics.rs), and read, write and
/// work as Node's: every line below is Node's answer for the same script, except that `atob` and
/// `btoa` are not enumerable (as QuickJS has always defined them; Node's are).
#[test]
fn intrinsics_added_on_first_use_read_write_and_work_as_in_node() {
    let text = content_of("deferred-intrinsics", "deferred-intrinsics");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "in globalThis: true",
            "own names: true",
            "Object.keys: none",
            "written before read: mine data w=true e=false c=true",
            "typeof: function function function object function function function",
            "after first read: data w=true e=false c=true | data w=true e=false c=true | data w=true e=false c=true",
            "typed arrays: 3 3 TypedArray true true",
            "encoder output: true true",
            "weak refs: true function",
            "base64: aGk= hi",
            "atob throws: true InvalidCharacterError",
            "DOMException: AbortError 20",
            "later groups in globalThis: true",
            "later groups in Object.keys: performance",
            "later written before read: mine data w=true e=false c=true",
            "later typeof: function function function function object",
            "later after first read: data w=true e=false c=true | data w=true e=false c=true",
            "dates: 1970-01-01T00:00:00.000Z 946684800000 true number",
            "maps and sets: a 2 2,3 4",
            "performance: number true",
        ]
    );
}

/// `URL` and `URLSearchParams` follow the WHATWG URL standard (the `url` crate's parser, setters
/// and form encoding): every line below is Node's answer for the same script (its URL is the
/// standard's too), except the first (before first use the globals are getters that load
/// `node:url`: a plugin that never touches them pays nothing).
#[test]
fn url_and_url_search_params_answer_as_the_whatwg_url_standard_specifies() {
    let text = content_of("whatwg-url", "whatwg-url");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "not loaded yet: function function",
            "typeof: function function function",
            "node:url is the global: true true",
            "relative against a base: http://x/a?b#c",
            "base as a URL: https://h.test/p/q?x",
            "scheme-relative: https://other.test/p",
            "idna host: example.com.",
            "unicode host: xn--bcher-kva.example",
            "ipv4 host: 127.0.0.1",
            "ipv6 host: [::1]:8080",
            "default port dropped: https://h.test/",
            "dot segments: /a/d",
            "backslashes: http://h.test/a/b",
            "spaces and controls: http://h.test/a%20b?c%20d#e%20f",
            "file URL: file:///tmp/x%20y.md",
            "opaque path: Someone@Example.com null",
            "origin: https://h.test:8443",
            "credentials: user p%40ss",
            "invalid URL throws: TypeError true ERR_INVALID_URL",
            "invalid base throws: TypeError",
            "invalid host throws: TypeError",
            "canParse: true false true",
            "URL.parse: https://h.test/y/x null",
            "toJSON: {\"u\":\"https://h.test/a?b\"}",
            "toString: https://h.test/%C3%A9",
            "setters: https://other.test:8080/q%20r?a=1#frag%20ment",
            "ignored setters: https://other.test:8080/q%20r?a=1#frag%20ment",
            "protocol and default port: http://other.test/q%20r?a=1#frag%20ment",
            "href setter throws: TypeError http://other.test/q%20r?a=1#frag%20ment",
            "search setter: ?x=1&y=2 http://other.test/q%20r?x=1&y=2",
            "searchParams is one object: true",
            "append updates href: https://h.test/s?b=2&a=1&b=3&c=x+y%26z",
            "sort updates href: https://h.test/s?a=1&b=2&b=3&c=x+y%26z",
            "delete with value: https://h.test/s?a=1&b=2&c=x+y%26z",
            "delete and set: https://h.test/s?a=%C3%A9&c=x+y%26z",
            "search setter reparses: v,w 2",
            "href setter reparses: 1 false",
            "empty params drop the query: \"\" https://h.test/",
            "parse: [[\"a\",\"1\"],[\"b\",\"x y\"],[\"c\",\"\"],[\"€\",\"%zz\"],[\"a\",\"2\"]]",
            "get and getAll: 1 1,2 null",
            "has with value: true false true",
            "size: 5",
            "serialize: a+b=%C3%A9%26%3D&%7E*=%21%27%28%29",
            "from pairs: x=1&x=2",
            "from params: q=1",
            "bad pair throws: TypeError",
            "sort is stable: a=2&a=1&b=3&z=1&z=0",
            "keys values entries: a,a,b,z,z 2,1,3,1,0 5",
            "forEach: a=2 a=1 b=3 z=1 z=0",
            "lone surrogate: %EF%BF%BD=x",
            "toStringTag: [object URLSearchParams] [object URL]",
            "enumerable on globalThis: false",
        ]
    );
}

/// A `{{ … }}` in a PLUGIN.md body with a root the studio does not fill reaches the prompt as
/// written: each is a warning at its PLUGIN.md line, and the plugin still loads.
#[test]
fn an_unknown_template_root_is_a_lint_at_its_plugin_md_line() {
    let plugins = load_some(&["ecosystem/unknown-roots"]);
    assert!(plugins[0].ok(), "{:?}", plugins[0].diagnostics);
    let hints: Vec<(&str, String, Option<u32>, Option<u32>)> = plugins[0]
        .hints
        .iter()
        .map(|h| {
            (
                h.code.as_str(),
                h.file
                    .as_ref()
                    .map(|f| f.display().to_string())
                    .unwrap_or_default(),
                h.line,
                h.column,
            )
        })
        .collect();
    let file = "unknown-roots/PLUGIN.md".to_string();
    assert_eq!(
        hints,
        [
            ("unknown-template-root", file.clone(), Some(10), Some(15)),
            ("unknown-template-root", file, Some(10), Some(47)),
        ]
    );
    assert!(
        plugins[0].hints[0]
            .message
            .contains("`{{ player.character }}` names `player`"),
        "{}",
        plugins[0].hints[0].message
    );
}
