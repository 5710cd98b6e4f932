//! The preview on the wire: the assembled prompt (blocks, messages, request bodies), the
//! segment table, the cache report, world context, slots, image flow, every call and the runs
//! that failed.

use super::common::{CallRecord, JsonValue, Number, PointId, RunError, SlotId, all};
use crate::preview as studio;
use covel_kernel::manifest;
use covel_kernel::prompt;
use covel_kernel::slot_host;
use serde::Serialize;
use specta::Type;
use std::borrow::Cow;
use std::sync::Arc;

/// Which runtime the prompt is assembled for (what the window shows, and what it asks for).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, Type)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "id")]
pub enum RuntimeTarget {
    Story,
    Plugin(String),
    Contract(String),
}

impl From<&studio::RuntimeTarget> for RuntimeTarget {
    fn from(t: &studio::RuntimeTarget) -> Self {
        match t {
            studio::RuntimeTarget::Story => RuntimeTarget::Story,
            studio::RuntimeTarget::Plugin(id) => RuntimeTarget::Plugin(id.clone()),
            studio::RuntimeTarget::Contract(c) => RuntimeTarget::Contract(c.clone()),
        }
    }
}

impl From<RuntimeTarget> for studio::RuntimeTarget {
    fn from(t: RuntimeTarget) -> Self {
        match t {
            RuntimeTarget::Story => studio::RuntimeTarget::Story,
            RuntimeTarget::Plugin(id) => studio::RuntimeTarget::Plugin(id),
            RuntimeTarget::Contract(c) => studio::RuntimeTarget::Contract(c),
        }
    }
}

/// Where a system-prompt block sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum BlockKind {
    Preamble,
    Body,
    StableSegments,
    TurnTail,
}

impl From<prompt::BlockKind> for BlockKind {
    fn from(k: prompt::BlockKind) -> Self {
        match k {
            prompt::BlockKind::Preamble => BlockKind::Preamble,
            prompt::BlockKind::Body => BlockKind::Body,
            prompt::BlockKind::StableSegments => BlockKind::StableSegments,
            prompt::BlockKind::TurnTail => BlockKind::TurnTail,
        }
    }
}

/// One block of the system prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    pub kind: BlockKind,
    pub text: String,
    #[specta(type = Number)]
    pub tokens: u64,
    pub cache_boundary: bool,
    pub segments: Vec<String>,
    /// Where the world lore (tags included) ends in `text`, in UTF-16 code units (a JavaScript
    /// string's indices), when the block opens with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<Number>, optional)]
    pub world_lore_end: Option<usize>,
}

impl From<&prompt::Block> for Block {
    fn from(b: &prompt::Block) -> Self {
        Block {
            kind: b.kind.into(),
            text: b.text.clone(),
            tokens: b.tokens,
            cache_boundary: b.cache_boundary,
            segments: b.segments.clone(),
            world_lore_end: b
                .world_lore_end
                .and_then(|end| b.text.get(..end))
                .map(|lore| lore.encode_utf16().count()),
        }
    }
}

/// Where a message, or a content block of the Anthropic request, came from.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Origin {
    /// A request's system block (never a message).
    System {
        block: BlockKind,
        segments: Vec<String>,
    },
    History {
        id: String,
    },
    Summary {
        id: String,
    },
    Segment {
        plugin: String,
        segment: String,
    },
    TurnContext {
        segments: Vec<String>,
    },
    PlayerInput,
}

impl From<&prompt::Origin> for Origin {
    fn from(o: &prompt::Origin) -> Self {
        match o.clone() {
            prompt::Origin::System { block, segments } => Origin::System {
                block: block.into(),
                segments,
            },
            prompt::Origin::History { id } => Origin::History { id },
            prompt::Origin::Summary { id } => Origin::Summary { id },
            prompt::Origin::Segment { plugin, segment } => Origin::Segment { plugin, segment },
            prompt::Origin::TurnContext { segments } => Origin::TurnContext { segments },
            prompt::Origin::PlayerInput => Origin::PlayerInput,
        }
    }
}

/// One message of the assembled prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: String,
    pub content: String,
    pub origin: Origin,
    #[specta(type = Number)]
    pub tokens: u64,
}

impl From<&prompt::Message> for Message {
    fn from(m: &prompt::Message) -> Self {
        Message {
            role: m.role.clone(),
            content: m.content.clone(),
            origin: (&m.origin).into(),
            tokens: m.tokens,
        }
    }
}

/// How often a segment's content changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "lowercase")]
pub enum Volatility {
    Stable,
    Session,
    Turn,
}

impl From<prompt::Volatility> for Volatility {
    fn from(v: prompt::Volatility) -> Self {
        match v {
            prompt::Volatility::Stable => Volatility::Stable,
            prompt::Volatility::Session => Volatility::Session,
            prompt::Volatility::Turn => Volatility::Turn,
        }
    }
}

/// A named segment position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum NamedPosition {
    System,
    PreHistory,
    PostHistory,
}

/// Where a segment asks to go: a named position or a depth in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(untagged)]
pub enum Position {
    Named(NamedPosition),
    Depth { depth: u32 },
}

impl From<&manifest::Position> for Position {
    fn from(p: &manifest::Position) -> Self {
        match p {
            manifest::Position::Named(n) => Position::Named(match n {
                manifest::NamedPosition::System => NamedPosition::System,
                manifest::NamedPosition::PreHistory => NamedPosition::PreHistory,
                manifest::NamedPosition::PostHistory => NamedPosition::PostHistory,
            }),
            manifest::Position::Depth { depth } => Position::Depth { depth: *depth },
        }
    }
}

/// A named audience.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "lowercase")]
pub enum NamedAudience {
    All,
    Story,
    #[serde(rename = "self")]
    Own,
}

/// Which runtimes see a segment.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(untagged)]
pub enum Audience {
    Named(NamedAudience),
    Contract { contract: String },
}

impl From<&prompt::Audience> for Audience {
    fn from(a: &prompt::Audience) -> Self {
        match a {
            prompt::Audience::Named(n) => Audience::Named(match n {
                prompt::NamedAudience::All => NamedAudience::All,
                prompt::NamedAudience::Story => NamedAudience::Story,
                prompt::NamedAudience::Own => NamedAudience::Own,
            }),
            prompt::Audience::Contract { contract } => Audience::Contract {
                contract: contract.clone(),
            },
        }
    }
}

/// Where a segment was placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "depth")]
pub enum Placement {
    SystemStable,
    SystemTurnTail,
    TurnContext,
    PreHistoryMessage,
    PostHistoryMessage,
    Depth(u32),
}

impl From<prompt::Placement> for Placement {
    fn from(p: prompt::Placement) -> Self {
        use prompt::Placement as K;
        match p {
            K::SystemStable => Placement::SystemStable,
            K::SystemTurnTail => Placement::SystemTurnTail,
            K::TurnContext => Placement::TurnContext,
            K::PreHistoryMessage => Placement::PreHistoryMessage,
            K::PostHistoryMessage => Placement::PostHistoryMessage,
            K::Depth(d) => Placement::Depth(d),
        }
    }
}

/// A segment's sort key.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SortKey {
    pub volatility: Volatility,
    #[specta(type = Number)]
    pub order: i64,
    pub provider_plugin_id: Arc<str>,
    pub id: Arc<str>,
}

impl From<&prompt::SegmentKey> for SortKey {
    fn from(k: &prompt::SegmentKey) -> Self {
        SortKey {
            volatility: k.volatility.into(),
            order: k.order,
            provider_plugin_id: k.provider_plugin_id.clone(),
            id: k.id.clone(),
        }
    }
}

/// One row of the segment table.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRow {
    pub plugin: Arc<str>,
    pub id: Arc<str>,
    pub volatility: Volatility,
    #[specta(type = Number)]
    pub order: i64,
    pub position: Position,
    #[specta(type = String)]
    pub role: Cow<'static, str>,
    pub audience: Audience,
    pub placement: Placement,
    pub volatility_applies: bool,
    pub sort_key: SortKey,
    pub tie_broken_by_plugin_id: bool,
    pub included: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_because: Option<String>,
    #[specta(type = Number)]
    pub tokens: u64,
    pub content: Arc<str>,
}

impl From<&prompt::SegmentRow> for SegmentRow {
    fn from(r: &prompt::SegmentRow) -> Self {
        SegmentRow {
            plugin: r.plugin.clone(),
            id: r.id.clone(),
            volatility: r.volatility.into(),
            order: r.order,
            position: (&r.position).into(),
            role: r.role.clone(),
            audience: (&r.audience).into(),
            placement: r.placement.into(),
            volatility_applies: r.volatility_applies,
            sort_key: (&r.sort_key).into(),
            tie_broken_by_plugin_id: r.tie_broken_by_plugin_id,
            included: r.included,
            excluded_because: r.excluded_because.clone(),
            tokens: r.tokens,
            content: r.content.clone(),
        }
    }
}

/// A content block of the Anthropic request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Type)]
#[serde(rename_all = "kebab-case", tag = "in")]
pub enum Place {
    System {
        #[specta(type = Number)]
        index: usize,
    },
    Message {
        #[specta(type = Number)]
        message: usize,
        role: &'static str,
        #[specta(type = Number)]
        block: usize,
    },
}

impl From<prompt::Place> for Place {
    fn from(p: prompt::Place) -> Self {
        match p {
            prompt::Place::System { index } => Place::System { index },
            prompt::Place::Message {
                message,
                role,
                block,
            } => Place::Message {
                message,
                role,
                block,
            },
        }
    }
}

/// The first block that differs on the next turn.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    pub place: Place,
    pub this_turn: Origin,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_turn: Option<Origin>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The difference in the author's words (the kernel's, as `covel preview` says it).
    pub said: String,
}

impl From<&prompt::Difference> for Difference {
    fn from(d: &prompt::Difference) -> Self {
        Difference {
            place: d.place.into(),
            this_turn: (&d.this_turn).into(),
            next_turn: d.next_turn.as_ref().map(Into::into),
            segment: d.segment.clone(),
            plugin: d.plugin.clone(),
            said: d.said.clone(),
        }
    }
}

/// One cache breakpoint judged against the next turn.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Breakpoint {
    #[specta(type = Number)]
    pub index: usize,
    pub place: Place,
    pub closes: Origin,
    /// The moving breakpoint on the newest history message.
    pub moving: bool,
    #[specta(type = Number)]
    pub prefix_tokens: u64,
    pub stable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<Difference>,
}

impl From<&prompt::Breakpoint> for Breakpoint {
    fn from(b: &prompt::Breakpoint) -> Self {
        Breakpoint {
            index: b.index,
            place: b.place.into(),
            closes: (&b.closes).into(),
            moving: b.moving,
            prefix_tokens: b.prefix_tokens,
            stable: b.stable,
            first_difference: b.first_difference.as_ref().map(Into::into),
        }
    }
}

/// The volatility lint.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct LintFinding {
    pub code: &'static str,
    pub plugin: String,
    pub segment: String,
    pub volatility: Volatility,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[specta(type = Option<Number>)]
    pub breaks_breakpoint: Option<usize>,
    pub message: String,
}

impl From<&prompt::LintFinding> for LintFinding {
    fn from(l: &prompt::LintFinding) -> Self {
        LintFinding {
            code: l.code,
            plugin: l.plugin.clone(),
            segment: l.segment.clone(),
            volatility: l.volatility.into(),
            breaks_breakpoint: l.breaks_breakpoint,
            message: l.message.clone(),
        }
    }
}

/// A breakpoint under the model's minimum cacheable prefix.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CacheWarning {
    pub code: &'static str,
    #[specta(type = Number)]
    pub breakpoint: usize,
    #[specta(type = Number)]
    pub prefix_tokens: u64,
    pub minimum: u32,
    pub message: String,
}

impl From<&prompt::CacheWarning> for CacheWarning {
    fn from(w: &prompt::CacheWarning) -> Self {
        CacheWarning {
            code: w.code,
            breakpoint: w.breakpoint,
            prefix_tokens: w.prefix_tokens,
            minimum: w.minimum,
            message: w.message.clone(),
        }
    }
}

/// What keeps a cached prefix stable.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CacheAdvice {
    pub code: &'static str,
    #[specta(type = Vec<Number>)]
    pub breakpoints: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    #[specta(type = Number)]
    pub lost_tokens: u64,
    #[specta(type = Number)]
    pub still_cached_tokens: u64,
    /// The finding in one sentence, in the author's words.
    pub headline: String,
    pub message: String,
    pub fix: String,
}

impl From<&prompt::CacheAdvice> for CacheAdvice {
    fn from(a: &prompt::CacheAdvice) -> Self {
        CacheAdvice {
            code: a.code,
            breakpoints: a.breakpoints.clone(),
            plugin: a.plugin.clone(),
            segment: a.segment.clone(),
            lost_tokens: a.lost_tokens,
            still_cached_tokens: a.still_cached_tokens,
            headline: a.headline.clone(),
            message: a.message.clone(),
            fix: a.fix.clone(),
        }
    }
}

/// Cache stability of every breakpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct CacheReport {
    pub breakpoints: Vec<Breakpoint>,
    /// null when there is no history to cache.
    pub history_prefix_stable: Option<bool>,
    pub advice: Vec<CacheAdvice>,
    pub lint: Vec<LintFinding>,
    pub warnings: Vec<CacheWarning>,
}

impl From<&prompt::CacheReport> for CacheReport {
    fn from(c: &prompt::CacheReport) -> Self {
        CacheReport {
            breakpoints: all(&c.breakpoints),
            history_prefix_stable: c.history_prefix_stable,
            advice: all(&c.advice),
            lint: all(&c.lint),
            warnings: all(&c.warnings),
        }
    }
}

/// The system prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SystemView {
    pub blocks: Vec<Block>,
    #[specta(type = Number)]
    pub tokens: u64,
}

/// The request bodies as sent. They hold every segment's text once more in each body (at 500
/// generated plugins ≈ 400 KB of a 1.6 MB preview), so the window asks for them when it shows
/// them ([`RequestBodies`]) instead of receiving them with every prompt; a played turn's
/// ([`super::turns::TurnPrompt`]) comes with its prompt, which is asked for on demand too.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct Requests {
    #[specta(type = crate::wire::common::JsonShape)]
    pub anthropic: JsonValue,
    #[specta(type = crate::wire::common::JsonShape)]
    pub openai: JsonValue,
}

impl From<&studio::PromptView> for Requests {
    fn from(p: &studio::PromptView) -> Self {
        Requests {
            anthropic: (&p.requests.anthropic).into(),
            openai: (&p.requests.openai).into(),
        }
    }
}

/// The live preview's request bodies, and the snapshot version whose prompt they belong to (the
/// window shows them only with that version, and asks again after a patch).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
pub struct RequestBodies {
    pub version: u32,
    pub requests: Requests,
}

/// The assembled prompt (its request bodies cross apart: [`Requests`]).
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct PromptView {
    pub system: SystemView,
    pub messages: Vec<Message>,
    pub turn_context: String,
}

impl From<&studio::PromptView> for PromptView {
    fn from(p: &studio::PromptView) -> Self {
        PromptView {
            system: SystemView {
                blocks: all(&p.system.blocks),
                tokens: p.system.tokens,
            },
            messages: all(&p.messages),
            turn_context: p.turn_context.clone(),
        }
    }
}

/// The world-context snapshot and who provided it.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct WorldContextView {
    #[specta(type = crate::wire::common::JsonShape)]
    pub snapshot: JsonValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub calls: Vec<CallRecord>,
}

/// One slot's value with its chain.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct SlotView {
    pub slot: SlotId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[specta(type = crate::wire::common::JsonShape)]
    pub value: JsonValue,
    pub revision: String,
    pub chain: Vec<CallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
}

impl From<&slot_host::SlotView> for SlotView {
    fn from(s: &slot_host::SlotView) -> Self {
        SlotView {
            slot: s.slot.into(),
            key: s.key.clone(),
            value: (&s.value).into(),
            revision: s.revision.clone(),
            chain: all(&s.chain),
            error: s.error.as_ref().map(Into::into),
        }
    }
}

/// The image flow and who provides it.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct ImageFlowView {
    #[specta(type = crate::wire::common::JsonShape)]
    pub flow: JsonValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provided_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub calls: Vec<CallRecord>,
}

/// How a history transform changed one message.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRewrite {
    /// The message id (`null` for a message without one).
    #[specta(type = crate::wire::common::JsonShape)]
    pub id: JsonValue,
    /// `rewritten`, `dropped` or `added`.
    pub change: &'static str,
    pub providers: Vec<String>,
}

/// A run of the preview that failed as a whole.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct PreviewError {
    pub point: PointId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotId>,
    /// `this-turn` (what the prompt shows) or `next-turn` (the assembly for cache stability).
    pub turn: TurnSide,
    pub error: RunError,
    pub message: String,
}

/// Which assembly a failed run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Type)]
#[serde(rename_all = "kebab-case")]
pub enum TurnSide {
    ThisTurn,
    NextTurn,
}

impl From<&studio::PreviewError> for PreviewError {
    fn from(e: &studio::PreviewError) -> Self {
        PreviewError {
            point: e.point.into(),
            slot: e.slot.map(Into::into),
            turn: if e.turn == "next-turn" {
                TurnSide::NextTurn
            } else {
                TurnSide::ThisTurn
            },
            error: (&e.error).into(),
            message: e.message.clone(),
        }
    }
}

/// Timings of one preview, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct PreviewTimings {
    #[specta(type = Number)]
    pub world_context_ms: f64,
    #[specta(type = Number)]
    pub segments_ms: f64,
    #[specta(type = Number)]
    pub next_turn_ms: f64,
    #[specta(type = Number)]
    pub slots_ms: f64,
    #[specta(type = Number)]
    pub total_ms: f64,
    /// Of both turns, waiting on the `prompt.segment@1` calls.
    #[specta(type = Number)]
    pub segment_calls_ms: f64,
    /// Of both turns, reading the segments and assembling the prompt.
    #[specta(type = Number)]
    pub assembly_ms: f64,
}

/// Everything the providers contribute for one session.
#[derive(Debug, Clone, PartialEq, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    pub session: String,
    pub runtime: RuntimeTarget,
    pub turn_id: String,
    pub prompt: PromptView,
    pub segments: Vec<SegmentRow>,
    pub cache: CacheReport,
    /// The story model's counts of the prompt: the numbers every panel shows (the rows'
    /// `tokens` are the SDK's `estimateTokens`, what budgets count).
    pub counts: crate::counts::PromptCounts,
    pub world_context: WorldContextView,
    pub slots: Vec<SlotView>,
    pub image_flow: ImageFlowView,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[specta(optional)]
    pub history_rewrites: Vec<HistoryRewrite>,
    pub calls: Vec<CallRecord>,
    /// Runs that failed as a whole (never silently dropped).
    pub errors: Vec<PreviewError>,
    pub timings: PreviewTimings,
}

impl Preview {
    /// The preview as the window sees it, with the story model's counts of its prompt.
    pub fn of(p: &studio::Preview, counts: crate::counts::PromptCounts) -> Self {
        Preview {
            session: p.session.clone(),
            runtime: (&p.runtime).into(),
            turn_id: p.turn_id.clone(),
            prompt: (&p.prompt).into(),
            segments: all(&p.segments),
            cache: CacheReport {
                // Counted as every panel counts, not with the kernel's estimateTokens.
                warnings: all(&crate::counts::below_minimum(p, &counts)),
                ..(&p.cache).into()
            },
            counts,
            world_context: WorldContextView {
                snapshot: (&p.world_context.snapshot).into(),
                provided_by: p.world_context.provided_by.clone(),
                error: p.world_context.error.clone(),
                calls: all(&p.world_context.calls),
            },
            slots: all(&p.slots),
            image_flow: ImageFlowView {
                flow: (&p.image_flow.flow).into(),
                provided_by: p.image_flow.provided_by.clone(),
                error: p.image_flow.error.clone(),
                calls: all(&p.image_flow.calls),
            },
            history_rewrites: p
                .history_rewrites
                .iter()
                .map(|h| HistoryRewrite {
                    id: (&h.id).into(),
                    change: h.change,
                    providers: h.providers.clone(),
                })
                .collect(),
            calls: all(&p.calls),
            errors: all(&p.errors),
            timings: PreviewTimings {
                world_context_ms: p.timings.world_context_ms,
                segments_ms: p.timings.segments_ms,
                next_turn_ms: p.timings.next_turn_ms,
                slots_ms: p.timings.slots_ms,
                total_ms: p.timings.total_ms,
                segment_calls_ms: p.timings.segment_calls_ms,
                assembly_ms: p.timings.assembly_ms,
            },
        }
    }
}
