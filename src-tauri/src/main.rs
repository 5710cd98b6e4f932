//! `covel-studio`: the desktop shell. `covel-studio [PLUGINS_DIR] [--session FILE]` opens a
//! plugins folder with a test session (plugins-sample/ and its demo session by default).

#![cfg_attr(all(not(debug_assertions), target_os = "windows"), windows_subsystem = "windows")]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut plugins = None;
    let mut session = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--session" => session = iter.next().cloned(),
            other if !other.starts_with('-') => plugins = Some(other.to_string()),
            _ => {}
        }
    }
    if let Err(error) = covel_studio_app::run(plugins, session) {
        eprintln!("covel-studio: {error:#}");
        std::process::exit(1);
    }
}
