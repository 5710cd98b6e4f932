//! The Tauri shell over covel-studio: commands and events, typed with tauri-specta. It holds
//! one `LiveStudio`, follows its folder with a watcher thread, and sends the UI what changed
//! after every reload (`covel_studio::wire`). No studio logic lives here.

mod commands;
mod error;
mod logging;
mod rendering;
mod state;

pub use commands::builder;
use tauri::Manager;

/// On Linux a window needs a display: without one GTK would panic ("Failed to initialize gtk
/// backend!") with a backtrace; this says what to do instead.
fn no_display_is_said() -> anyhow::Result<()> {
    let display = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if cfg!(target_os = "linux") && !display("DISPLAY") && !display("WAYLAND_DISPLAY") {
        anyhow::bail!(
            "there is no display to open the window on (neither DISPLAY nor WAYLAND_DISPLAY is set). Run it in a desktop session, under a virtual display (`xvfb-run covel-studio …`), or use the `covel` command line, which needs none"
        );
    }
    Ok(())
}

/// Starts the app on a plugins folder and session.
pub fn run(plugins: Option<String>, session: Option<String>) -> anyhow::Result<()> {
    logging::init();
    let builder = builder();
    // Regenerating the UI's bindings is explicit (a test checks they are fresh).
    if std::env::var_os("COVEL_EXPORT_BINDINGS").is_some() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings.ts");
        commands::export_bindings(&path)
            .map_err(|e| anyhow::anyhow!("exporting TypeScript bindings: {e}"))?;
    }
    no_display_is_said()?;
    let initial = state::initial_folder(plugins, session);
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(state::AppState::default())
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            match app.get_webview_window("main") {
                Some(window) => rendering::apply(&window, &rendering::decide_here()),
                None => tracing::warn!("no main window: its rendering was left as it is"),
            }
            if let Some((plugins, session)) = initial {
                let handle = app.handle().clone();
                std::thread::spawn(move || state::open(&handle, &plugins, session.as_deref()));
            }
            Ok(())
        })
        .run(tauri::generate_context!())
        .map_err(|e| anyhow::anyhow!("running the window: {e}"))
}
