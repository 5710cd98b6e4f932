//! Recorded model calls: `covel play --record FILE` keeps every request a real backend sent and
//! the raw answer it got; the `replay` backend answers a request from the recording when it is
//! byte-for-byte the request recorded (as JSON; whether it asked for a stream aside), and
//! otherwise fails loudly with the nearest recorded request and the places where they differ.
//! API keys travel in headers and are never recorded.
//!
//! `covel test --rerecord-changed` keeps a recording useful as plugins change: the replay
//! backend logs which exchange answered each request ([`Used`]), asks the recorded backend again
//! for the requests the recording lacks, and [`Recording::rerecorded`] makes the recording that
//! run leaves behind (hits as they were, misses answered afresh, unused exchanges dropped).

use crate::textdiff;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The format tag of a recording file.
pub const FORMAT: &str = "covel-recording@1";

/// Recordings are at most this large.
const MAX_RECORDING_BYTES: u64 = 64 * 1024 * 1024;

/// One request and the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Exchange {
    /// The request body as sent (with the model name the backend set).
    pub request: Value,
    /// The API's answer, unchanged (text, stop reason, usage).
    pub response: Value,
}

/// A recording file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Recording {
    pub format: String,
    /// The backend that was recorded (`anthropic` or `openai`): replay sends that backend's body.
    pub backend: String,
    pub exchanges: Vec<Exchange>,
}

/// Why a recording could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "the replay backend needs `recording: FILE` in the session's model (written by `covel play --record FILE`)"
    )]
    NoRecording,
    #[error("cannot read the recording {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("the recording {path} is not a {FORMAT} file: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot write the recording {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Miss(String),
}

impl Recording {
    pub fn new(backend: &str, exchanges: Vec<Exchange>) -> Recording {
        Recording {
            format: FORMAT.into(),
            backend: backend.into(),
            exchanges,
        }
    }

    /// Reads a recording file.
    pub fn load(path: &Path) -> Result<Recording, ReplayError> {
        let text = covel_kernel::files::read_regular(path, MAX_RECORDING_BYTES).map_err(|e| {
            ReplayError::Read {
                path: path.to_path_buf(),
                reason: e.to_string(),
            }
        })?;
        let recording: Recording =
            serde_json::from_str(&text).map_err(|e| ReplayError::Invalid {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?;
        if recording.format != FORMAT {
            return Err(ReplayError::Invalid {
                path: path.to_path_buf(),
                reason: format!("format is `{}`", recording.format),
            });
        }
        if !matches!(recording.backend.as_str(), "anthropic" | "openai") {
            return Err(ReplayError::Invalid {
                path: path.to_path_buf(),
                reason: format!("unknown backend `{}`", recording.backend),
            });
        }
        Ok(recording)
    }

    /// Writes the recording as pretty JSON.
    pub fn save(&self, path: &Path) -> Result<(), ReplayError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| ReplayError::Write {
            path: path.to_path_buf(),
            source: std::io::Error::other(e),
        })?;
        crate::save::write_author_file(path, (text + "\n").as_bytes()).map_err(|e| {
            ReplayError::Write {
                path: path.to_path_buf(),
                source: match e {
                    crate::save::SaveError::Io { source, .. } => source,
                    other => std::io::Error::other(other.to_string()),
                },
            }
        })
    }

    /// The answer to `request`: the first unused exchange whose request is equal (then any
    /// equal one); a miss names the nearest recorded request and how this one differs.
    pub fn answer(&self, request: &Value, used: &mut Vec<bool>) -> Result<Value, ReplayError> {
        match self.find(request, used) {
            Some(index) => Ok(self.exchanges[index].response.clone()),
            None => Err(ReplayError::Miss(self.miss_report(request))),
        }
    }

    /// The index of the exchange that answers `request` (see [`Recording::answer`]), marked
    /// used; `None` when no recorded request equals it.
    pub fn find(&self, request: &Value, used: &mut Vec<bool>) -> Option<usize> {
        used.resize(self.exchanges.len(), false);
        // Whether the request was streamed does not change its answer: a turn recorded by
        // `covel play` (streamed) replays in `covel test` (not streamed), and back.
        let request = &unstreamed(request);
        let equal: Vec<usize> = self
            .exchanges
            .iter()
            .enumerate()
            .filter(|(_, e)| &unstreamed(&e.request) == request)
            .map(|(i, _)| i)
            .collect();
        let index = *equal.iter().find(|&&i| !used[i]).or(equal.first())?;
        used[index] = true;
        Some(index)
    }

    /// The recording a run that used `used` leaves: the exchanges in the order used (recorded
    /// ones as they were, fresh ones as answered), without those no request used (stale now).
    pub fn rerecorded(&self, used: &[Used]) -> Rerecorded {
        // A run that asked the model nothing (every turn scripted) says nothing about which
        // exchanges are stale: the recording stays whole.
        if used.is_empty() {
            return Rerecorded {
                kept: self.exchanges.len(),
                rerecorded: 0,
                dropped: 0,
                changed: false,
                recording: self.clone(),
            };
        }
        let mut still_used = vec![false; self.exchanges.len()];
        let exchanges: Vec<Exchange> = used
            .iter()
            .filter_map(|u| match u {
                Used::Recorded(index) => {
                    *still_used.get_mut(*index)? = true;
                    self.exchanges.get(*index).cloned()
                }
                Used::Fresh(exchange) => Some(exchange.clone()),
            })
            .collect();
        let rerecorded = used.iter().filter(|u| matches!(u, Used::Fresh(_))).count();
        let recording = Recording::new(&self.backend, exchanges);
        Rerecorded {
            kept: recording.exchanges.len() - rerecorded,
            rerecorded,
            dropped: still_used.iter().filter(|u| !**u).count(),
            changed: recording != *self,
            recording,
        }
    }

    /// Why `request` has no answer here: the nearest recorded request and where they differ.
    pub fn miss_report(&self, request: &Value) -> String {
        let request = &unstreamed(request);
        let this = serde_json::to_string_pretty(request).unwrap_or_default();
        let nearest = self
            .exchanges
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let recorded =
                    serde_json::to_string_pretty(&unstreamed(&e.request)).unwrap_or_default();
                (
                    i,
                    similar::TextDiff::from_words(recorded.as_str(), this.as_str()).ratio(),
                )
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((index, ratio)) = nearest else {
            return format!(
                "replay miss: the recording ({} backend) has no exchanges",
                self.backend
            );
        };
        let changes = textdiff::json(&self.exchanges[index].request, request, 8);
        let mut text = format!(
            "replay miss: none of the {} recorded {} requests equals this request; nearest is exchange #{} ({:.0}% similar). Where this request differs from it:",
            self.exchanges.len(),
            self.backend,
            index + 1,
            ratio * 100.0
        );
        for change in changes {
            text.push_str(&format!("\n  {}: {}", change.pointer, change.diff));
        }
        text.push_str(
            "\nIf the change is intended, re-record the requests that changed with `covel test --rerecord-changed` (or record again with `covel play --record FILE`).",
        );
        text
    }
}

/// Which exchange answered a request of a replay run.
#[derive(Debug, Clone, PartialEq)]
pub enum Used {
    /// The recording's exchange at this index.
    Recorded(usize),
    /// None in the recording: the recorded backend was asked again, and answered this.
    Fresh(Exchange),
}

/// What a re-recording run leaves (see [`Recording::rerecorded`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Rerecorded {
    /// The recording to write (equal to the old one when nothing changed).
    pub recording: Recording,
    /// Recorded exchanges used again (a request used twice counts twice).
    pub kept: usize,
    /// Requests the recording lacked, answered afresh.
    pub rerecorded: usize,
    /// Recorded exchanges no request used.
    pub dropped: usize,
    /// Whether the recording differs from the one the run started from (the same exchanges in
    /// another order, or one used twice, differ too).
    pub changed: bool,
}

/// A request body without what asks for a stream (`stream`, `stream_options`).
fn unstreamed(request: &Value) -> Value {
    let mut request = request.clone();
    if let Some(fields) = request.as_object_mut() {
        fields.remove("stream");
        fields.remove("stream_options");
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_replay_miss_names_the_nearest_request_and_the_differing_words() {
        let recording = Recording::new(
            "anthropic",
            vec![
                Exchange {
                    request: json!({"system": [{"text": "The narrator is grave."}], "messages": []}),
                    response: json!({"n": 1}),
                },
                Exchange {
                    request: json!({"system": [{"text": "Something else entirely."}], "messages": [1, 2]}),
                    response: json!({"n": 2}),
                },
            ],
        );
        let mut used = Vec::new();
        assert_eq!(
            recording
                .answer(
                    &json!({"system": [{"text": "The narrator is grave."}], "messages": []}),
                    &mut used
                )
                .ok(),
            Some(json!({"n": 1}))
        );
        let miss = recording.answer(
            &json!({"system": [{"text": "The narrator is wry."}], "messages": []}),
            &mut used,
        );
        let Err(ReplayError::Miss(text)) = miss else {
            panic!("expected a miss")
        };
        assert!(text.contains("nearest is exchange #1"), "{text}");
        assert!(
            text.contains("/system/0/text: ") && text.contains("[-grave.-]{+wry.+}"),
            "{text}"
        );
    }

    fn exchange(request: &str, response: u32) -> Exchange {
        Exchange {
            request: json!({"say": request}),
            response: json!({"n": response}),
        }
    }

    #[test]
    fn a_run_that_asked_the_model_nothing_leaves_the_recording_whole() {
        let recording = Recording::new("openai", vec![exchange("a", 1), exchange("b", 2)]);
        let result = recording.rerecorded(&[]);
        assert_eq!(result.recording, recording);
        assert_eq!(
            (
                result.kept,
                result.rerecorded,
                result.dropped,
                result.changed
            ),
            (2, 0, 0, false)
        );
    }

    #[test]
    fn a_rerecorded_recording_keeps_hits_in_order_used_replaces_misses_and_drops_stale_exchanges() {
        let recording = Recording::new(
            "openai",
            vec![exchange("a", 1), exchange("b", 2), exchange("c", 3)],
        );
        let fresh = exchange("b2", 4);
        let run = [
            Used::Recorded(0),
            Used::Fresh(fresh.clone()),
            Used::Recorded(2),
        ];
        let result = recording.rerecorded(&run);
        assert_eq!(
            result.recording,
            Recording::new("openai", vec![exchange("a", 1), fresh, exchange("c", 3)])
        );
        assert_eq!(
            (
                result.kept,
                result.rerecorded,
                result.dropped,
                result.changed
            ),
            (2, 1, 1, true)
        );
        let same = recording.rerecorded(&[Used::Recorded(0), Used::Recorded(1), Used::Recorded(2)]);
        assert_eq!(
            same.recording, recording,
            "nothing to change: the same recording"
        );
        assert_eq!(
            (same.kept, same.rerecorded, same.dropped, same.changed),
            (3, 0, 0, false)
        );
    }
}
