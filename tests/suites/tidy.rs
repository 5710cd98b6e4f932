//! House rules a machine can check: every Rust source file opens with a `//!` paragraph,
//! ARCHITECTURE.md lists exactly the diagnostic codes the kernel has, and every test, file and
//! function its seed rule table names exists, and the studio's domain never imports its wire.

use covel_kernel::diagnostic::Code;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        // `vendor` holds third-party code as published (crates/js/vendor, checked byte for byte by
        // its script), not the house's: its binding files are `include!` fragments, which cannot
        // open with an inner doc (E0753); its crate root has one.
        if name == "target" || name == "node_modules" || name == "vendor" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_source_file_opens_with_a_module_doc() {
    let root = repo();
    let mut files = Vec::new();
    for dir in ["crates", "tests", "src-tauri"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found the sources");
    let missing: Vec<String> = files
        .iter()
        .filter(|f| {
            !std::fs::read_to_string(f)
                .unwrap_or_default()
                .starts_with("//!")
        })
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a //! doc: {missing:?}");
}

#[test]
fn architecture_lists_exactly_the_diagnostic_codes() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = text
        .split("## Diagnostic codes")
        .nth(1)
        .and_then(|s| s.split("Resolver rejections").next())
        .expect("the codes section");
    let listed: Vec<&str> = section.split('`').skip(1).step_by(2).collect();
    let mut expected: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let mut listed_sorted = listed.clone();
    listed_sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(
        listed_sorted, expected,
        "ARCHITECTURE.md's codes and covel_kernel::Code differ"
    );
}

#[test]
fn every_test_named_in_the_seed_rule_table_exists() {
    let root = repo();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = text
        .split("## Where each seed rule lives")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the seed rule table");
    let named: Vec<&str> = section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| Seed rule"))
        .filter_map(|line| line.trim_end_matches('|').rsplit('|').next())
        .map(|cell| cell.trim().trim_matches('`'))
        .collect();
    assert!(
        named.len() > 30,
        "the table lists the seed's rules: {named:?}"
    );
    let mut files = Vec::new();
    for dir in ["crates", "tests", "src-tauri"] {
        rust_files(&root.join(dir), &mut files);
    }
    let sources: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    let missing: Vec<&&str> = named
        .iter()
        .filter(|name| !sources.contains(&format!("fn {name}()")))
        .collect();
    assert!(
        missing.is_empty(),
        "tests named in ARCHITECTURE.md's seed rule table that do not exist: {missing:?}"
    );
}

/// The seed rule table's middle column: `path::fn` or `path::{a, b}` items, each naming a file
/// (from the repository root) and the functions in it that decide the rule.
fn seed_rule_places(text: &str) -> Vec<String> {
    let section = text
        .split("## Where each seed rule lives")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the seed rule table");
    section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| Seed rule"))
        .filter_map(|line| line.split(" | ").nth(1))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether `source` (a `.rs` or `.js` file) defines `name`: `fn name(` / `fn name<` in Rust;
/// `function name(` or a method definition `name(…) {` in JavaScript.
fn defines(source: &str, js: bool, name: &str) -> bool {
    if js {
        source.contains(&format!("function {name}("))
            || source.lines().any(|line| {
                line.trim_start().starts_with(&format!("{name}(")) && line.trim_end().ends_with('{')
            })
    } else {
        source.contains(&format!("fn {name}(")) || source.contains(&format!("fn {name}<"))
    }
}

#[test]
fn every_file_and_function_named_in_the_seed_rule_table_exists() {
    let root = repo();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let places = seed_rule_places(&text);
    assert!(
        places.len() > 40,
        "every seed rule names where it lives: {places:?}"
    );
    let mut wrong = Vec::new();
    for place in &places {
        let split = [".rs::", ".js::"]
            .iter()
            .find_map(|ext| place.find(ext).map(|at| at + ext.len() - 2));
        let Some(at) = split else {
            wrong.push(format!("`{place}` is not `path::fn`"));
            continue;
        };
        let (path, names) = (&place[..at], &place[at + 2..]);
        let Ok(source) = std::fs::read_to_string(root.join(path)) else {
            wrong.push(format!("`{place}`: no file {path}"));
            continue;
        };
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',').map(str::trim) {
            if name.is_empty() || !defines(&source, path.ends_with(".js"), name) {
                wrong.push(format!("`{place}`: {path} defines no `{name}`"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "places named in ARCHITECTURE.md's seed rule table that do not exist: {wrong:#?}"
    );
}

#[test]
fn every_rust_test_named_in_the_caches_table_exists() {
    let root = repo();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let section = text
        .split("## Caches")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the caches table");
    // The last column names the tests: `suite::name` or `module::tests::name` (Rust), or a
    // UI test file.
    let named: Vec<String> = section
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| cache"))
        .filter_map(|line| line.trim_end_matches('|').rsplit('|').next())
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .filter(|name| name.contains("::"))
                .filter_map(|name| name.rsplit("::").next())
                .map(|name| name.trim_start_matches('…').to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(named.len() >= 13, "every cache names its test: {named:?}");
    let mut files = Vec::new();
    for dir in ["crates", "tests", "src-tauri"] {
        rust_files(&root.join(dir), &mut files);
    }
    let sources: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    let missing: Vec<&String> = named
        .iter()
        .filter(|name| !sources.contains(&format!("fn {name}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "tests named in ARCHITECTURE.md's caches table that do not exist: {missing:?}"
    );
}

/// The wire (`covel_studio::wire`) turns the studio's state into what the window receives; the
/// domain (every other module of the crate) never names it, so that the two do not import each
/// other and the domain can change without the window's shapes, and the other way round.
#[test]
fn the_studio_domain_does_not_import_the_wire() {
    let src = repo().join("crates/studio/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let wire = src.join("wire");
    let mut offenders = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&wire)) {
        let text = std::fs::read_to_string(file).expect("readable");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let names_wire = ["crate::wire", "super::wire", "covel_studio::wire"]
                .iter()
                .any(|path| code.contains(path))
                || (code.trim_start().starts_with("use crate::{") && code.contains("wire"));
            if names_wire {
                offenders.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(repo()).unwrap_or(file).display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the domain imports the wire:\n{}",
        offenders.join("\n")
    );
}
