//! The kernel's contract tables: the six extension points, the kernel UI slots, and the rules
//! that tie a versioned contract id (`name@N`) to the one current version.
//!
//! The kernel never negotiates versions: each contract has exactly one current version, and a
//! plugin that names any other version fails to load with a message naming the current one.

mod id;
mod schemas;

pub use id::{ContractId, ContractIdError};
pub use schemas::{SchemaError, Validator};

use serde::Serialize;
use std::sync::OnceLock;
use std::time::Duration;

/// How several providers of one point combine (seed page, "Combination modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One valid provider; with none, the call site decides the default.
    Single,
    /// Every provider's validated output is gathered.
    Collect,
    /// Each provider gets the previous valid result, in declared order.
    Pipeline,
}

/// What a provider failure does to the call (seed page, `onError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// Skip this provider and continue.
    Skip,
    /// The whole turn fails.
    FailTurn,
}

/// Identifies one of the six kernel extension points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum PointId {
    #[serde(rename = "prompt.segment@1")]
    PromptSegment,
    #[serde(rename = "prompt.history-transform@1")]
    PromptHistoryTransform,
    #[serde(rename = "ui.slot@1")]
    UiSlot,
    #[serde(rename = "media.image-flow@1")]
    MediaImageFlow,
    #[serde(rename = "session.world-context@1")]
    SessionWorldContext,
    #[serde(rename = "history.compact@2")]
    HistoryCompact,
}

impl PointId {
    pub const ALL: [PointId; 6] = [
        PointId::PromptSegment,
        PointId::PromptHistoryTransform,
        PointId::UiSlot,
        PointId::MediaImageFlow,
        PointId::SessionWorldContext,
        PointId::HistoryCompact,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PointId::PromptSegment => "prompt.segment@1",
            PointId::PromptHistoryTransform => "prompt.history-transform@1",
            PointId::UiSlot => "ui.slot@1",
            PointId::MediaImageFlow => "media.image-flow@1",
            PointId::SessionWorldContext => "session.world-context@1",
            PointId::HistoryCompact => "history.compact@2",
        }
    }

    pub fn parse(id: &str) -> Option<PointId> {
        PointId::ALL.into_iter().find(|p| p.as_str() == id)
    }

    /// The point's definition: mode, timeout, onError and schemas.
    pub fn point(self) -> &'static ExtensionPoint {
        let table = points();
        &table[PointId::ALL
            .iter()
            .position(|p| *p == self)
            .unwrap_or_default()]
    }
}

impl std::fmt::Display for PointId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identifies a kernel UI slot filled through `ui.slot@1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum SlotId {
    #[serde(rename = "stage.backdrop@1")]
    StageBackdrop,
    #[serde(rename = "stage.cast@1")]
    StageCast,
    #[serde(rename = "stage.choices@1")]
    StageChoices,
    #[serde(rename = "character.visual@1")]
    CharacterVisual,
    #[serde(rename = "session.summary@1")]
    SessionSummary,
    #[serde(rename = "stage.music@1")]
    StageMusic,
}

impl SlotId {
    pub const ALL: [SlotId; 6] = [
        SlotId::StageBackdrop,
        SlotId::StageCast,
        SlotId::StageChoices,
        SlotId::CharacterVisual,
        SlotId::SessionSummary,
        SlotId::StageMusic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SlotId::StageBackdrop => "stage.backdrop@1",
            SlotId::StageCast => "stage.cast@1",
            SlotId::StageChoices => "stage.choices@1",
            SlotId::CharacterVisual => "character.visual@1",
            SlotId::SessionSummary => "session.summary@1",
            SlotId::StageMusic => "stage.music@1",
        }
    }

    pub fn parse(id: &str) -> Option<SlotId> {
        SlotId::ALL.into_iter().find(|s| s.as_str() == id)
    }

    /// The validator of what a provider of this slot returns (for `character.visual@1`, the
    /// collection `{characters: [...]}`).
    pub fn value_validator(self) -> &'static Validator {
        let index = SlotId::ALL
            .iter()
            .position(|s| *s == self)
            .unwrap_or_default();
        &slot_validators()[index]
    }
}

impl std::fmt::Display for SlotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kernel extension point, as the seed page's table defines it.
#[derive(Debug)]
pub struct ExtensionPoint {
    pub id: PointId,
    pub mode: Mode,
    pub timeout: Duration,
    pub on_error: OnError,
    pub input: Validator,
    /// For `ui.slot@1` this accepts any slot value or null; the runner validates against the
    /// selected slot's own schema.
    pub output: Validator,
}

fn points() -> &'static [ExtensionPoint] {
    static POINTS: OnceLock<Vec<ExtensionPoint>> = OnceLock::new();
    POINTS.get_or_init(|| {
        PointId::ALL
            .into_iter()
            .map(|id| {
                // The seed page's point table: each point's mode, timeout and `onError`.
                let (mode, timeout_ms, on_error) = match id {
                    PointId::PromptSegment => (Mode::Collect, 500, OnError::Skip),
                    PointId::PromptHistoryTransform => (Mode::Pipeline, 500, OnError::Skip),
                    PointId::UiSlot => (Mode::Pipeline, 500, OnError::Skip),
                    PointId::MediaImageFlow => (Mode::Single, 500, OnError::Skip),
                    PointId::SessionWorldContext => (Mode::Single, 500, OnError::FailTurn),
                    PointId::HistoryCompact => (Mode::Single, 60_000, OnError::Skip),
                };
                let (input, output) = schemas::point_schemas(id);
                ExtensionPoint {
                    id,
                    mode,
                    timeout: Duration::from_millis(timeout_ms),
                    on_error,
                    input: Validator::compile(&format!("{id} input"), input),
                    output: Validator::compile(&format!("{id} output"), output),
                }
            })
            .collect()
    })
}

fn slot_validators() -> &'static [Validator] {
    static SLOTS: OnceLock<Vec<Validator>> = OnceLock::new();
    SLOTS.get_or_init(|| {
        SlotId::ALL
            .into_iter()
            .map(|slot| Validator::compile(slot.as_str(), schemas::slot_schema(slot)))
            .collect()
    })
}

/// The JSON Schema of each kernel slot's value as a slot view holds it (what the window
/// shows): what a provider returns, except `character.visual@1`, which the host splits into one
/// value per character. The UI's slot value types are generated from these.
pub fn slot_view_schemas() -> Vec<(SlotId, &'static serde_json::Value)> {
    SlotId::ALL
        .into_iter()
        .map(|slot| {
            let validator = match slot {
                SlotId::CharacterVisual => character_visual_validator(),
                _ => slot.value_validator(),
            };
            (slot, validator.schema())
        })
        .collect()
}

/// The validator of one `character.visual@1` value, after the host splits the collection.
pub fn character_visual_validator() -> &'static Validator {
    static ONE: OnceLock<Validator> = OnceLock::new();
    ONE.get_or_init(|| {
        Validator::compile("character.visual@1 value", schemas::character_visual_one())
    })
}

/// The validator of one history message (`prompt.history-transform@1` input items): what a test
/// session's `history.messages` must be once the studio filled in what it derives.
pub fn history_message_validator() -> &'static Validator {
    static ONE: OnceLock<Validator> = OnceLock::new();
    ONE.get_or_init(|| Validator::compile("history message", schemas::history_message()))
}

/// The validator of one stored `history.compact@2` summary record.
pub fn summary_record_validator() -> &'static Validator {
    static ONE: OnceLock<Validator> = OnceLock::new();
    ONE.get_or_init(|| Validator::compile("history summary", schemas::summary_record()))
}

/// What a contract id names, as far as the kernel is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelContract {
    Point(PointId),
    Slot(SlotId),
}

/// Why a contract id is not a current kernel contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelLookupError {
    /// The name exists with another version; `current` is the one in force.
    Retired {
        requested: String,
        current: &'static str,
    },
    /// A version that used to exist and was removed with no successor.
    Removed {
        requested: String,
        note: &'static str,
    },
    /// Not a kernel contract at all.
    Unknown { requested: String },
}

impl std::fmt::Display for KernelLookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelLookupError::Retired { requested, current } => write!(
                f,
                "`{requested}` is not the current contract version; the kernel only runs `{current}` (versions are never negotiated)"
            ),
            KernelLookupError::Removed { requested, note } => {
                write!(f, "`{requested}` was removed from the kernel: {note}")
            }
            KernelLookupError::Unknown { requested } => {
                write!(f, "`{requested}` is not a kernel extension point")
            }
        }
    }
}

/// Contracts that once existed and have no successor.
const REMOVED: &[(&str, &str)] = &[(
    "stage.dialogue@1",
    "speaker name tags come from story segments, not from a slot",
)];

/// Looks up a kernel extension point by id, explaining retired and unknown versions.
pub fn lookup_point(requested: &str) -> Result<PointId, KernelLookupError> {
    if let Some(point) = PointId::parse(requested) {
        return Ok(point);
    }
    // One current version per contract: another version of a known point fails, naming the
    // current one (versions are never negotiated).
    let name = requested.split('@').next().unwrap_or(requested);
    if let Some(current) = PointId::ALL
        .iter()
        .find(|p| p.as_str().split('@').next() == Some(name))
    {
        return Err(KernelLookupError::Retired {
            requested: requested.to_string(),
            current: current.as_str(),
        });
    }
    Err(KernelLookupError::Unknown {
        requested: requested.to_string(),
    })
}

/// Looks up a kernel UI slot by id, explaining retired and removed versions.
pub fn lookup_slot(requested: &str) -> Result<SlotId, KernelLookupError> {
    if let Some(slot) = SlotId::parse(requested) {
        return Ok(slot);
    }
    if let Some((_, note)) = REMOVED.iter().find(|(id, _)| *id == requested) {
        return Err(KernelLookupError::Removed {
            requested: requested.to_string(),
            note,
        });
    }
    let name = requested.split('@').next().unwrap_or(requested);
    if let Some(current) = SlotId::ALL
        .iter()
        .find(|s| s.as_str().split('@').next() == Some(name))
    {
        return Err(KernelLookupError::Retired {
            requested: requested.to_string(),
            current: current.as_str(),
        });
    }
    Err(KernelLookupError::Unknown {
        requested: format!("{requested} (as a UI slot)"),
    })
}

/// Whether a contract id names a kernel point or slot (current or any other version of one):
/// such contracts cannot be targeted by `conflicts`, and naming them in `provides` satisfies
/// nothing.
pub fn kernel_contract(id: &str) -> Option<KernelContract> {
    if let Some(point) = PointId::parse(id) {
        return Some(KernelContract::Point(point));
    }
    SlotId::parse(id).map(KernelContract::Slot)
}

/// Whether `id` is a kernel contract under any version (used for `conflicts`, where even a
/// retired version of a kernel point is a kernel contract, not a plugin one).
pub fn is_kernel_contract_name(id: &str) -> bool {
    let name = id.split('@').next().unwrap_or(id);
    PointId::ALL
        .iter()
        .any(|p| p.as_str().split('@').next() == Some(name))
        || SlotId::ALL
            .iter()
            .any(|s| s.as_str().split('@').next() == Some(name))
        || REMOVED
            .iter()
            .any(|(r, _)| r.split('@').next() == Some(name))
}
