//! Tauri commands and events. Payloads are the studio's serializable views, passed as JSON
//! typed `unknown` in TypeScript (the UI declares the view shapes it reads).

use crate::state::{self, AppState};
use covel_studio::RuntimeTarget;
use covel_studio::live::LiveStudio;
use serde::{Deserialize, Serialize};
use specta::Type;
use tauri::{AppHandle, State};
use tauri_specta::{Builder, collect_commands, collect_events};

/// A JSON value; TypeScript sees `unknown`.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
#[serde(transparent)]
pub struct Json(#[specta(type = specta_typescript::Unknown)] pub serde_json::Value);

impl Json {
    pub fn of<T: Serialize>(value: &T) -> Json {
        Json(serde_json::to_value(value).unwrap_or(serde_json::Value::Null))
    }
}

/// Sent after the studio changed on its own (a reload) or while it opens a folder.
#[derive(Debug, Clone, Serialize, Deserialize, Type, tauri_specta::Event)]
pub struct StudioChanged {
    pub reason: String,
    pub snapshot: Option<Json>,
}

/// A recently opened folder.
#[derive(Debug, Clone, Serialize, Deserialize, Type)]
pub struct RecentFolder {
    pub plugins: String,
    pub session: Option<String>,
}

fn with_studio<T>(state: &State<'_, AppState>, f: impl FnOnce(&mut LiveStudio) -> Result<T, String>) -> Result<T, String> {
    let mut guard = state.studio.lock().map_err(|_| "studio state poisoned".to_string())?;
    let studio = guard.as_mut().ok_or("no folder is open")?;
    f(studio)
}

#[tauri::command]
#[specta::specta]
async fn open_workspace(app: AppHandle, plugins: String, session: Option<String>) -> Result<Json, String> {
    state::open(&app, &plugins, session.as_deref())
}

#[tauri::command]
#[specta::specta]
async fn snapshot(state: State<'_, AppState>) -> Result<Json, String> {
    with_studio(&state, |s| Ok(Json::of(&s.snapshot())))
}

#[tauri::command]
#[specta::specta]
async fn set_runtime(state: State<'_, AppState>, target: String) -> Result<Json, String> {
    let target = RuntimeTarget::parse(&target).ok_or_else(|| format!("`{target}` is not story, plugin:ID or contract:C"))?;
    with_studio(&state, |s| {
        s.set_target(target);
        Ok(Json::of(&s.snapshot()))
    })
}

#[tauri::command]
#[specta::specta]
async fn play_turn(state: State<'_, AppState>, message: String) -> Result<Json, String> {
    state.cancel.store(false, std::sync::atomic::Ordering::SeqCst);
    let cancel = std::sync::Arc::clone(&state.cancel);
    with_studio(&state, |s| {
        s.play_turn_cancellable(&message, &cancel);
        Ok(Json::of(&s.snapshot()))
    })
}

#[tauri::command]
#[specta::specta]
async fn cancel_work(state: State<'_, AppState>) -> Result<(), String> {
    state.cancel.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

#[tauri::command]
#[specta::specta]
async fn undo_turn(state: State<'_, AppState>) -> Result<Json, String> {
    with_studio(&state, |s| {
        s.undo();
        Ok(Json::of(&s.snapshot()))
    })
}

#[tauri::command]
#[specta::specta]
async fn save_played_session(state: State<'_, AppState>, path: String) -> Result<(), String> {
    with_studio(&state, |s| {
        let target = std::path::Path::new(&path);
        // Played turns go to a new file; the authored session is replaced only by its own edits.
        if s.workspace().session_path.as_deref().is_some_and(|authored| covel_studio::save::same_file(target, authored)) {
            return Err(format!("{path} is the authored session: save the played session to a new file"));
        }
        s.play.save(target).map(|_| ()).map_err(|e| e.to_string())
    })
}

#[tauri::command]
#[specta::specta]
async fn update_session(state: State<'_, AppState>, session: Json) -> Result<Json, String> {
    with_studio(&state, |s| {
        s.update_session(session.0).map_err(|d| d.to_string())?;
        Ok(Json::of(&s.snapshot()))
    })
}

/// The Cache panel: the played turns and the next one, forecast for a model.
#[tauri::command]
#[specta::specta]
async fn forecast(state: State<'_, AppState>, model: Option<String>, pace: f64, ttl: String) -> Result<Json, String> {
    let options = covel_studio::forecast::ForecastOptions { pace_seconds: pace, ttl };
    with_studio(&state, |s| s.forecast(model.as_deref(), &options).map(|f| Json::of(&f)))
}

/// The Tests panel: every test session of the open folder (`update` rewrites golden snapshots).
#[tauri::command]
#[specta::specta]
async fn run_tests(state: State<'_, AppState>, update: bool) -> Result<Json, String> {
    with_studio(&state, |s| {
        let dir = s.workspace().plugins_dir.clone();
        let results = covel_studio::testing::run_folder(&dir, update, &s.workspace().limits).map_err(|e| e.to_string())?;
        Ok(Json(serde_json::json!({"passed": results.iter().all(|r| r.passed), "sessions": Json::of(&results).0})))
    })
}

#[tauri::command]
#[specta::specta]
async fn recent_folders(app: AppHandle) -> Result<Vec<RecentFolder>, String> {
    Ok(state::recent(&app).into_iter().map(|(plugins, session)| RecentFolder { plugins, session }).collect())
}

/// The commands and events, for the invoke handler and the TypeScript export.
pub fn builder() -> Builder<tauri::Wry> {
    Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            open_workspace,
            snapshot,
            set_runtime,
            play_turn,
            cancel_work,
            undo_turn,
            save_played_session,
            update_session,
            recent_folders,
            forecast,
            run_tests
        ])
        .events(collect_events![StudioChanged])
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_typescript_bindings_are_fresh() {
        let dir = std::env::temp_dir().join(format!("covel-bindings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let fresh = dir.join("bindings.ts");
        super::builder()
            .export(specta_typescript::Typescript::default().header("// @ts-nocheck\n"), &fresh)
            .expect("export");
        let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/src/lib/bindings.ts");
        let expected = std::fs::read_to_string(&fresh).expect("fresh bindings");
        let actual = std::fs::read_to_string(&committed).unwrap_or_default();
        assert!(actual == expected, "ui/src/lib/bindings.ts is stale: run `COVEL_EXPORT_BINDINGS=1 cargo run -p covel-studio-app` (or copy {}) and commit it", fresh.display());
    }
}
