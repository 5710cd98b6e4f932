//! Tauri build script: generates the app context (icons, capabilities) at compile time.
fn main() {
    tauri_build::build()
}
