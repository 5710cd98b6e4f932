//! The usage a replayed (or re-recorded) model call reports, checked against the forecast's
//! prediction for the same request: a test whose recording says 21 input tokens where the
//! prompt it was made from is predicted at 138 fails, and says by how much. Only real backends
//! report usage, so sessions answered by scripted replies or the scripted model have nothing
//! to check.
//!
//! What is checked is every input token of the request (uncached, cache write and cache read
//! together), against the forecast's count and its error bar (Claude counts are estimates:
//! [`crate::tokens::EstimateRule`]). How those tokens split between cache reads and writes
//! depends on the time between the turns and the provider's cache at the time, which a replay
//! does not keep; `covel forecast --pace` compares the split.

use super::TurnCapture;
use super::checks::CheckResult;
use crate::facts::ModelFacts;
use crate::forecast::{self, ForecastOptions, PlayedTurn};
use crate::tokens::TokenCounter;
use covel_kernel::session::Session;

/// The rule's name in reports.
pub const RULE: &str = "reported-usage";

/// For each captured turn, the check of its reported usage, or `None` when it reported none
/// (or the story model is not in the model facts, so nothing can be predicted).
pub fn checks(session: &Session, captures: &[TurnCapture]) -> Vec<Option<CheckResult>> {
    let none = || vec![None; captures.len()];
    if captures.iter().all(|c| c.usage.is_none()) {
        return none();
    }
    let story = &session.models.story;
    let Some(profile) = story
        .model
        .as_deref()
        .and_then(|model| ModelFacts::embedded().ok()?.profile(model).ok())
    else {
        return none();
    };
    let played: Vec<PlayedTurn> = captures
        .iter()
        .map(|c| PlayedTurn {
            turn_id: c.turn_id.clone(),
            say: c.say.clone(),
            preview: c.preview.clone(),
            usage: c.usage.clone(),
            reply: None,
            with_newer_plugins: false,
        })
        .collect();
    let options = ForecastOptions {
        ttl: story
            .cache_ttl
            .map_or("5m", covel_kernel::session::CacheTtl::name)
            .into(),
        ..ForecastOptions::default()
    };
    let predicted = forecast::forecast(&played, &profile, &options, &TokenCounter::new());
    captures
        .iter()
        .zip(&predicted.turns)
        .map(|(capture, turn)| {
            let reported = turn.reported?;
            capture.usage.as_ref()?;
            let total = reported.input_tokens + reported.cache_write_tokens + reported.cache_read_tokens;
            let range = turn
                .input_tokens_range
                .map(|(low, high)| format!(", {low}–{high} by the estimate's error bar"))
                .unwrap_or_default();
            let description = format!(
                "{}'s reported input tokens ({total}) are in the range predicted for {} ({}{range})",
                capture.turn_id, profile.model.id, turn.input_tokens
            );
            let failure = turn
                .mismatches
                .iter()
                .find(|m| m.field == "input")
                .map(|m| m.message.clone());
            Some(CheckResult {
                rule: RULE,
                description,
                passed: failure.is_none(),
                detail: failure,
                location: None,
            })
        })
        .collect()
}
