//! What this build is: the studio's version (the workspace's), the version of upstream Covel's
//! SDK (`@covel/plugin-handlers-utils`) its SDK modules mirror, and the kernel contracts it
//! implements. One text for `covel --version`, `covel-studio --version` and the window's About.

use covel_kernel::contract::{PointId, SlotId};
use serde::Serialize;
use std::sync::OnceLock;

/// The studio's version: the workspace's, as Cargo knows it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version of upstream's SDK whose surface the sandbox serves (`crates/js/src/js/sdk/`).
pub const SDK_VERSION: &str = "0.0.50";

/// The build as the About box shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct About {
    pub version: String,
    pub sdk_version: String,
    /// The extension points the kernel runs (`prompt.segment@1`, …).
    pub extension_points: Vec<String>,
    /// The UI slots it projects (`stage.backdrop@1`, …).
    pub slots: Vec<String>,
}

/// This build.
pub fn about() -> About {
    About {
        version: VERSION.into(),
        sdk_version: SDK_VERSION.into(),
        extension_points: PointId::ALL
            .iter()
            .map(|p| p.as_str().to_string())
            .collect(),
        slots: SlotId::ALL.iter().map(|s| s.as_str().to_string()).collect(),
    }
}

/// What `--version` prints after the program's name: the version, then a line each for the SDK
/// and the contracts.
pub fn version_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let about = about();
        format!(
            "{}\nCovel SDK (@covel/plugin-handlers-utils) mirrored: {}\nextension points: {}\nUI slots: {}",
            about.version,
            about.sdk_version,
            about.extension_points.join(", "),
            about.slots.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_text_names_the_sdk_and_every_contract() {
        let text = version_text();
        assert!(text.starts_with(&format!("{VERSION}\n")));
        assert!(text.contains("mirrored: 0.0.50"));
        for point in PointId::ALL {
            assert!(text.contains(point.as_str()), "{point:?}");
        }
        for slot in SlotId::ALL {
            assert!(text.contains(slot.as_str()), "{slot:?}");
        }
    }
}
