//! The hostile cases that need the real `covel` binary and its environment (issue #45): keys
//! never follow a redirect, the trust file is read only from an absolute path, and saves never
//! lose or clobber a file. Servers listen on loopback only and stop by themselves.

use covel_tests::copy_dir;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY: &str = "sk-hostile-secret-0123456789";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn covel_in(dir: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_covel"));
    command.args(args).current_dir(dir);
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.output().expect("covel runs")
}

fn text_of(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A loopback server that answers every request with `answer` (with `{port}` standing for its
/// own port) and keeps what it was sent; it stops after `limit` requests or ten seconds.
fn server(
    answer: impl Fn(u16) -> String + Send + 'static,
    limit: usize,
) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(10);
        let mut served = 0;
        while Instant::now() < until && served < limit {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let mut request = Vec::new();
            let mut buf = [0u8; 8192];
            // Headers, then the body its Content-Length announces.
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .and_then(|v| v.trim().parse::<usize>().ok())
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            kept.lock()
                .expect("lock")
                .push(String::from_utf8_lossy(&request).to_string());
            let _ = stream.write_all(answer(port).as_bytes());
        }
    });
    (port, seen)
}

fn json_answer(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// In `dir`: a trust file at `settings` that trusts `COVEL_HOSTILE_KEY` for the loopback
/// origin on `port`, the sample plugins as `plugins/`, and `s.session.yaml` whose story model is
/// `model` (YAML flow fields) with that key.
fn keyed_session(dir: &Path, settings: &Path, port: u16, model: &str) {
    std::fs::write(
        settings,
        format!(
            "trustedKeys:\n  - {{ env: COVEL_HOSTILE_KEY, origin: http://127.0.0.1:{port} }}\n"
        ),
    )
    .expect("settings");
    copy_dir(&repo().join("plugins-sample"), &dir.join("plugins"));
    std::fs::write(
        dir.join("s.session.yaml"),
        format!(
            "id: s\nlocale: en\nmodels:\n  story: {{ {model}, apiKeyEnv: COVEL_HOSTILE_KEY, contextWindow: 200000, reservedForResponse: 1000 }}\n"
        ),
    )
    .expect("session");
}

/// `covel play plugins --session s.session.yaml --say hello` in `dir` (see [`keyed_session`]).
fn play_keyed(dir: &Path, env: &[(&str, Option<&str>)]) -> Output {
    covel_in(
        dir,
        &[
            "play",
            "plugins",
            "--session",
            "s.session.yaml",
            "--say",
            "hello",
        ],
        env,
    )
}

#[test]
fn row_9_a_trusted_model_server_that_redirects_never_passes_the_key_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (elsewhere, taken) = server(
        |_| {
            json_answer(r#"{"content":[{"type":"text","text":"stolen"}],"stop_reason":"end_turn"}"#)
        },
        4,
    );
    let (trusted, asked) = server(
        move |_| {
            format!(
                "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{elsewhere}/v1/messages\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
        },
        4,
    );
    let settings = dir.path().join("trusted-keys.yaml");
    keyed_session(
        dir.path(),
        &settings,
        trusted,
        &format!(
            "backend: anthropic, model: claude-sonnet-4-5, baseUrl: http://127.0.0.1:{trusted}"
        ),
    );
    let output = play_keyed(
        dir.path(),
        &[
            (
                "COVEL_STUDIO_CONFIG",
                Some(settings.to_str().expect("utf-8")),
            ),
            ("COVEL_HOSTILE_KEY", Some(KEY)),
        ],
    );
    let said = text_of(&output);
    let taken = taken.lock().expect("lock");
    assert!(
        taken.iter().all(|r| !r.contains(KEY)),
        "the other origin never sees the key: {taken:?}"
    );
    let asked = asked.lock().expect("lock");
    assert!(
        asked.iter().any(|r| r.contains(KEY)),
        "the trusted origin got the key: {asked:?}"
    );
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(said.contains("redirects to"), "{said}");
}

#[test]
fn row_10_without_an_absolute_config_home_no_trust_file_is_read_from_the_working_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, seen) = server(
        |_| {
            json_answer(
                r#"{"choices":[{"message":{"role":"assistant","content":"The tide turns."},"finish_reason":"stop"}]}"#,
            )
        },
        4,
    );
    // What a cloned repository could hold: a trust file where a relative path would look.
    std::fs::create_dir_all(dir.path().join("covel-studio")).expect("mkdir");
    keyed_session(
        dir.path(),
        &dir.path().join("covel-studio/trusted-keys.yaml"),
        port,
        &format!("backend: openai, model: local, baseUrl: http://127.0.0.1:{port}/v1"),
    );
    for home in [None, Some("")] {
        let output = play_keyed(
            dir.path(),
            &[
                ("COVEL_STUDIO_CONFIG", None),
                ("XDG_CONFIG_HOME", Some("")),
                ("HOME", home),
                ("COVEL_HOSTILE_KEY", Some(KEY)),
            ],
        );
        let said = text_of(&output);
        assert!(said.contains("The tide turns."), "{said}");
        assert!(said.contains("no trusted-keys file is used"), "{said}");
    }
    let seen = seen.lock().expect("lock");
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|r| !r.contains(KEY)),
        "the loopback server gets no key: {seen:?}"
    );
}

fn sample_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo().join("plugins-sample"), dir.path());
    dir
}

#[test]
fn row_11_saves_of_the_same_file_at_once_never_delete_each_other() {
    let dir = sample_copy();
    let children: Vec<_> = (0..6)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_covel"))
                .args([
                    "play",
                    ".",
                    "--session",
                    "demo.session.yaml",
                    "--say",
                    "I ring the bell.",
                    "--save",
                    "same.session.yaml",
                ])
                .current_dir(dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("covel starts")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("covel ends");
        assert_eq!(output.status.code(), Some(0), "{}", text_of(&output));
    }
    let saved = dir.path().join("same.session.yaml");
    let reopened = covel_in(
        dir.path(),
        &["preview", ".", "--session", saved.to_str().expect("utf-8")],
        &[],
    );
    assert_eq!(reopened.status.code(), Some(0), "{}", text_of(&reopened));
    let temps: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".covel-tmp"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}

#[test]
fn row_12_a_large_session_the_studio_opened_and_played_can_be_saved_and_opened_again() {
    let dir = sample_copy();
    let demo = std::fs::read_to_string(dir.path().join("demo.session.yaml")).expect("demo");
    // 28 000 rows of nine YAML nodes each: more than the parser's default 250 000 nodes.
    let rows: String = (0..28_000)
        .map(|i| {
            format!("  - {{ pluginId: world-state, namespace: world, key: k{i}, value: {i} }}\n")
        })
        .collect();
    let big = demo.replacen("pluginData:\n", &format!("pluginData:\n{rows}"), 1);
    assert_ne!(big, demo);
    std::fs::write(dir.path().join("big.session.yaml"), big).expect("big");
    let output = covel_in(
        dir.path(),
        &[
            "play",
            ".",
            "--session",
            "big.session.yaml",
            "--say",
            "hello",
            "--save",
            "big.played.session.yaml",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text_of(&output));
    let reopened = covel_in(
        dir.path(),
        &["resolve", ".", "--session", "big.played.session.yaml"],
        &[],
    );
    assert_eq!(reopened.status.code(), Some(0), "{}", text_of(&reopened));
}

#[test]
fn row_13_a_save_over_a_read_only_file_is_refused_and_the_file_kept() {
    use std::os::unix::fs::PermissionsExt;
    let dir = sample_copy();
    let locked = dir.path().join("locked.session.yaml");
    std::fs::write(&locked, "id: locked\nlocale: en\n").expect("write");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let output = covel_in(
        dir.path(),
        &[
            "play",
            ".",
            "--session",
            "demo.session.yaml",
            "--say",
            "hello",
            "--save",
            "locked.session.yaml",
        ],
        &[],
    );
    let said = text_of(&output);
    assert_ne!(output.status.code(), Some(0), "{said}");
    assert!(said.contains("is read-only"), "{said}");
    assert_eq!(
        std::fs::read_to_string(&locked).expect("read"),
        "id: locked\nlocale: en\n"
    );
    assert!(!dir.path().join("locked.session.yaml.bak").exists());
}
