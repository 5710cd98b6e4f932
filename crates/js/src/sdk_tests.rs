//! Upstream's SDK tests against the studio's SDK: each `*.test.ts` / `*.test.js` file of a
//! folder runs in a plugin runtime of its own, with the studio's small vitest stand-in
//! (`js/testing/vitest.js`) as `vitest` and the SDK's entries for the package's `../src/*.js`
//! modules ([`crate::engine::run_test_file`]). The folder is a scratch copy the author made:
//! upstream's files are never part of this repository. `covel sdk-tests DIR` (hidden) and
//! `scripts/upstream-sdk-tests` print what this answers.

use crate::engine::{Limits, run_test_file};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long one file's tests may take together (each test has 5 s of its own in the stand-in).
const FILE_TIMEOUT: Duration = Duration::from_secs(60);

/// One test as the stand-in ran it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestResult {
    /// The `describe` titles and the test's own, joined by ` > `.
    pub name: String,
    pub passed: bool,
    pub skipped: bool,
    /// The first line of why it failed.
    pub error: Option<String>,
}

/// One file's tests, or why the file could not run at all (its tests are then unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReport {
    /// The file's name inside the folder.
    pub file: String,
    pub tests: Vec<TestResult>,
    pub failure: Option<String>,
}

impl FileReport {
    pub fn passed(&self) -> usize {
        self.tests.iter().filter(|t| t.passed && !t.skipped).count()
    }

    pub fn failed(&self) -> usize {
        self.tests.iter().filter(|t| !t.passed).count()
    }

    pub fn total(&self) -> usize {
        self.tests.len()
    }
}

/// Whether `path` names a test file the runner takes (`x.test.ts`, `.test.mts`, `.test.js`, `.test.mjs`).
pub fn is_test_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        [".test.ts", ".test.mts", ".test.js", ".test.mjs"]
            .iter()
            .any(|ext| n.ends_with(ext))
    })
}

/// The test files directly in `dir`, by name.
pub fn test_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_file() && is_test_file(path))
        .collect();
    files.sort();
    Ok(files)
}

/// Runs one test file in a new runtime.
pub fn run_file(path: &Path) -> FileReport {
    let file = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    match run_test_file(path, Limits::default(), FILE_TIMEOUT) {
        Ok(results) => match tests_of(&results) {
            Some(tests) => FileReport {
                file,
                tests,
                failure: None,
            },
            None => FileReport {
                file,
                tests: Vec::new(),
                failure: Some(
                    "the stand-in's run() answered something that is not a list of results".into(),
                ),
            },
        },
        Err(why) => FileReport {
            file,
            tests: Vec::new(),
            failure: Some(why),
        },
    }
}

/// Runs every test file of `dir`, one runtime each, in name order.
pub fn run_dir(dir: &Path) -> std::io::Result<Vec<FileReport>> {
    Ok(test_files(dir)?.iter().map(|f| run_file(f)).collect())
}

fn tests_of(results: &Json) -> Option<Vec<TestResult>> {
    results
        .as_array()?
        .iter()
        .map(|r| {
            Some(TestResult {
                name: r.get("name")?.as_str()?.to_string(),
                passed: r.get("passed")?.as_bool()?,
                skipped: r.get("skipped").and_then(Json::as_bool).unwrap_or(false),
                error: r.get("error").and_then(Json::as_str).map(str::to_string),
            })
        })
        .collect()
}
