//! Studio benchmarks on a synthetic 50-plugin folder: opening it cold, a full preview, the
//! node-peer-equivalent preview (segments, five slots, world context), and reloading one
//! changed plugin (the work after the debounce). Run with `cargo bench -p covel-tests`.

use covel_js::Limits;
use covel_studio::live::LiveStudio;
use covel_studio::{RuntimeTarget, Workspace};
use covel_tests::synthetic;
use std::time::Instant;

fn main() {
    divan::main();
}

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    synthetic::write_plugins(dir.path(), 50).expect("generate");
    dir
}

#[divan::bench(sample_count = 10)]
fn open_50_plugins_cold(bencher: divan::Bencher) {
    let dir = folder();
    bencher.bench_local(|| Workspace::open(dir.path(), None, &Limits::default()).expect("opens"));
}

#[divan::bench(sample_count = 100)]
fn full_preview_50_plugins(bencher: divan::Bencher) {
    let dir = folder();
    let ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    bencher.bench_local(|| ws.preview(&RuntimeTarget::Story));
}

#[divan::bench(sample_count = 200)]
fn peer_equivalent_preview_50_plugins(bencher: divan::Bencher) {
    let dir = folder();
    let ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    bencher.bench_local(|| ws.quick_preview("Look around."));
}

#[divan::bench(sample_count = 30)]
fn reload_one_changed_plugin_of_50(bencher: divan::Bencher) {
    let dir = folder();
    let ws = Workspace::open(dir.path(), None, &Limits::default()).expect("opens");
    let mut studio = LiveStudio::new(ws, RuntimeTarget::Story);
    let entry = dir.path().join("gen-007/server/index.js");
    let original = std::fs::read_to_string(&entry).expect("read");
    let mut n = 0;
    bencher.bench_local(|| {
        n += 1;
        std::fs::write(
            &entry,
            original.replace("The hall is old.", &format!("The hall is old ({n}).")),
        )
        .expect("write");
        let changes = studio.classify(std::slice::from_ref(&entry));
        studio.reload(&changes, Instant::now())
    });
}
