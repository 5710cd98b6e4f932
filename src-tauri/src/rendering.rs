//! How the window's web view renders. WebKitGTK composites pages with OpenGL. Where the machine
//! offers no GPU (no DRM render node: a virtual machine, a remote desktop, Xvfb in CI), that GL
//! is Mesa's software rasteriser, and compositing then costs more than it saves: every frame
//! took tens of milliseconds, most of what a save took to reach the painted prompt panel
//! (figures in `docs/performance-history.md`). So on Linux without a render node the window
//! turns WebKit's hardware acceleration off; with one it keeps WebKit's default. Other
//! platforms' web views are left as they are.
//!
//! `COVEL_STUDIO_ACCELERATION=on|off|auto` overrides the detection. An author's own
//! `WEBKIT_DISABLE_COMPOSITING_MODE` is WebKit's to honour: the studio then leaves the policy
//! alone.

use std::path::Path;

/// The variable that overrides the detection.
pub const OVERRIDE: &str = "COVEL_STUDIO_ACCELERATION";
/// WebKitGTK's own switch, which an author may have set for other reasons.
const WEBKIT_SWITCH: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";

/// What the window does about hardware acceleration, and why (the reason goes to the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `Some(false)`: turn it off; `Some(true)`: turn it on; `None`: leave WebKit's default.
    pub accelerate: Option<bool>,
    pub reason: String,
    /// An override value the studio did not understand (it then detects as with `auto`).
    pub unknown_override: Option<String>,
}

/// The decision for this process: its environment and whether the machine has a GPU render node.
pub fn decide_here() -> Decision {
    if cfg!(not(target_os = "linux")) {
        return Decision {
            accelerate: None,
            reason: "the platform's web view decides (only WebKitGTK is tuned)".into(),
            unknown_override: None,
        };
    }
    decide(
        std::env::var(OVERRIDE).ok().as_deref(),
        std::env::var_os(WEBKIT_SWITCH).is_some(),
        has_render_node(Path::new("/dev/dri")),
    )
}

/// The decision from its three inputs: the override's value, whether WebKit's own switch is
/// set, and whether a render node exists.
pub fn decide(overridden: Option<&str>, webkit_switch: bool, render_node: bool) -> Decision {
    let mut unknown_override = None;
    match overridden.map(str::trim) {
        Some("on") => {
            return Decision {
                accelerate: Some(true),
                reason: format!("{OVERRIDE}=on"),
                unknown_override,
            };
        }
        Some("off") => {
            return Decision {
                accelerate: Some(false),
                reason: format!("{OVERRIDE}=off"),
                unknown_override,
            };
        }
        Some("auto") | Some("") | None => {}
        Some(other) => unknown_override = Some(other.to_string()),
    }
    let (accelerate, reason) = if webkit_switch {
        (None, format!("{WEBKIT_SWITCH} is set: WebKit decides"))
    } else if render_node {
        (
            None,
            "a GPU render node exists: WebKit's default".to_string(),
        )
    } else {
        (
            Some(false),
            "no GPU render node (/dev/dri/renderD*): compositing would run in software".to_string(),
        )
    };
    Decision {
        accelerate,
        reason,
        unknown_override,
    }
}

/// Whether `dri` (`/dev/dri`) holds a render node (`renderD128`, …), the device a GPU offers
/// for rendering without a display.
pub fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with("renderD"))
    })
}

/// Applies the decision to the main window's web view (Linux: WebKitGTK's settings) and logs
/// the policy WebKit then reports, with the reason.
pub fn apply<R: tauri::Runtime>(window: &tauri::WebviewWindow<R>, decision: &Decision) {
    if let Some(value) = &decision.unknown_override {
        tracing::warn!("{OVERRIDE}={value:?} is not one of on, off, auto: detecting as with auto");
    }
    let Some(accelerate) = decision.accelerate else {
        tracing::info!(
            "web view hardware acceleration: left as it is ({})",
            decision.reason
        );
        return;
    };
    #[cfg(target_os = "linux")]
    {
        let reason = decision.reason.clone();
        let applied = window.with_webview(move |webview| {
            use webkit2gtk::{HardwareAccelerationPolicy, SettingsExt, WebViewExt};
            let Some(settings) = WebViewExt::settings(&webview.inner()) else {
                tracing::warn!("the web view has no settings: hardware acceleration left as it is");
                return;
            };
            settings.set_hardware_acceleration_policy(if accelerate {
                HardwareAccelerationPolicy::Always
            } else {
                HardwareAccelerationPolicy::Never
            });
            let now = settings.hardware_acceleration_policy();
            tracing::info!("web view hardware acceleration: {now:?} ({reason})");
        });
        if let Err(error) = applied {
            tracing::warn!("could not set the web view's hardware acceleration: {error}");
        }
    }
    // Elsewhere `decide_here` never asks for a change.
    #[cfg(not(target_os = "linux"))]
    let _ = (window, accelerate);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_render_node_compositing_is_turned_off() {
        let decision = decide(None, false, false);
        assert_eq!(decision.accelerate, Some(false));
        assert!(decision.reason.contains("no GPU render node"));
    }

    #[test]
    fn with_a_render_node_webkit_keeps_its_default() {
        assert_eq!(decide(None, false, true).accelerate, None);
        assert_eq!(decide(Some("auto"), false, true).accelerate, None);
    }

    #[test]
    fn the_override_wins_over_the_detection() {
        assert_eq!(decide(Some("on"), false, false).accelerate, Some(true));
        assert_eq!(decide(Some("off"), false, true).accelerate, Some(false));
        assert_eq!(decide(Some(" off "), true, true).accelerate, Some(false));
    }

    #[test]
    fn webkits_own_switch_is_left_to_webkit() {
        let decision = decide(None, true, false);
        assert_eq!(decision.accelerate, None);
        assert!(decision.reason.contains(WEBKIT_SWITCH));
    }

    #[test]
    fn an_override_it_does_not_understand_is_reported_and_detection_goes_on() {
        let decision = decide(Some("yes"), false, false);
        assert_eq!(decision.unknown_override.as_deref(), Some("yes"));
        assert_eq!(decision.accelerate, Some(false));
    }

    #[test]
    fn a_render_node_is_a_renderd_entry_of_the_dri_folder() -> std::io::Result<()> {
        let temp = tempfile::tempdir()?;
        let dir = temp.path().join("dri");
        assert!(!has_render_node(&dir), "a missing folder");
        std::fs::create_dir(&dir)?;
        assert!(!has_render_node(&dir), "an empty folder");
        std::fs::write(dir.join("card0"), "")?;
        assert!(!has_render_node(&dir), "a display card only");
        std::fs::write(dir.join("renderD128"), "")?;
        assert!(has_render_node(&dir));
        Ok(())
    }
}
