//! Segments read from provider outputs, kept from one preview to the next. A preview whose
//! calls the memo answered hands the assembly the very outputs (shared values) the previous
//! preview had, so their segments are taken again instead of read again: a save at 500 plugins
//! otherwise reads a thousand segments per turn, all but its own plugin's the same as before.
//!
//! An entry is keyed by its output's identity and holds a weak reference to it, as the runner's
//! checked outputs do (`runner::holds` says why a matching address is the same, unchanged
//! value): the output's text is freed with the last preview that uses it. An entry is only
//! ever taken for the value it was read from, with the plugin id it was stamped with: what it
//! gives equals a fresh read.

use super::segment::{ProvidedSegments, Segment};
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// The segments read from outputs, each stamped with the last generation (a preview) that took
/// it.
#[derive(Debug, Default)]
pub struct SegmentReads {
    generations: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    /// By the output's address.
    reads: foldhash::HashMap<usize, Read>,
    generation: u64,
    taken_again: usize,
}

#[derive(Debug)]
struct Read {
    /// Held so the key's address stays this value's (weakly: the value is not kept alive).
    output: Weak<Value>,
    plugin_id: Arc<str>,
    segments: Arc<[Segment]>,
    /// The last generation that read or took it.
    generation: u64,
}

impl SegmentReads {
    /// Starts a new generation: a read neither this generation nor the one before took is
    /// forgotten, so the reads held are those of at most two previews.
    pub fn next_generation(&self) {
        let mut generations = self.lock();
        generations.generation += 1;
        let oldest_kept = generations.generation - 1;
        generations
            .reads
            .retain(|_, read| read.generation >= oldest_kept);
    }

    /// The segments of a `prompt.segment@1` run's parts, as [`Segment::parse_parts`] reads
    /// them: an output read in this generation or the one before is taken again.
    pub fn parse_parts(&self, parts: &[ProvidedSegments]) -> Vec<Segment> {
        let mut generations = self.lock();
        let generation = generations.generation;
        let mut segments = Vec::with_capacity(parts.iter().map(Segment::count_in).sum());
        for part in parts {
            let key = Arc::as_ptr(&part.output).addr();
            match generations.reads.get_mut(&key) {
                Some(read) if read.reads(part) => {
                    read.generation = generation;
                    segments.extend(read.segments.iter().cloned());
                    generations.taken_again += 1;
                }
                _ => {
                    let read: Arc<[Segment]> = Segment::read_part(part).collect();
                    segments.extend(read.iter().cloned());
                    generations.reads.insert(
                        key,
                        Read {
                            output: Arc::downgrade(&part.output),
                            plugin_id: Arc::clone(&part.plugin_id),
                            segments: read,
                            generation,
                        },
                    );
                }
            }
        }
        segments
    }

    /// How many parts were taken again instead of read, since the start.
    pub fn taken_again(&self) -> usize {
        self.lock().taken_again
    }

    /// How many outputs' reads are held now.
    pub fn held(&self) -> usize {
        self.lock().reads.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        // The map holds only finished reads: a panic elsewhere leaves it usable.
        self.generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Read {
    /// Whether this read is the one `part` would give: the same value, stamped the same.
    fn reads(&self, part: &ProvidedSegments) -> bool {
        crate::runner::holds(&self.output, &part.output) && self.plugin_id == part.plugin_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn part(plugin: &str, output: &Arc<Value>) -> ProvidedSegments {
        ProvidedSegments {
            plugin_id: Arc::from(plugin),
            output: Arc::clone(output),
        }
    }

    fn output(content: &str) -> Arc<Value> {
        Arc::new(json!([
            {"id": "a", "content": content, "position": "system", "audience": "all",
             "volatility": "stable", "providerPluginId": "forged"},
            {"id": "b", "content": "second", "position": {"depth": 2}, "audience": "story",
             "volatility": "turn", "order": 3}
        ]))
    }

    #[test]
    fn reads_taken_again_equal_a_fresh_read_and_only_the_same_value_stamped_the_same_is_taken() {
        let reads = SegmentReads::default();
        let (one, two) = (output("one"), output("two"));
        let parts = [part("p1", &one), part("p2", &two)];
        let first = reads.parse_parts(&parts);
        assert_eq!(first, Segment::parse_parts(&parts));
        assert_eq!(reads.taken_again(), 0);

        reads.next_generation();
        assert_eq!(reads.parse_parts(&parts), first, "taken again, the same");
        assert_eq!(reads.taken_again(), 2);

        // An equal value that is another value, and the same value stamped for another plugin,
        // are read again.
        let equal = output("one");
        let other = [part("p1", &equal), part("p3", &two)];
        assert_eq!(reads.parse_parts(&other), Segment::parse_parts(&other));
        assert_eq!(reads.taken_again(), 2, "neither was taken again");
        assert!(
            reads
                .parse_parts(&other)
                .iter()
                .all(|s| &*s.provider_plugin_id != "forged"),
            "stamped with the part's plugin, whatever the output says"
        );
    }

    #[test]
    fn a_read_no_generation_takes_again_is_forgotten_at_the_next() {
        let reads = SegmentReads::default();
        let (kept, dropped) = (output("kept"), output("dropped"));
        reads.parse_parts(&[part("p", &kept), part("q", &dropped)]);
        reads.next_generation();
        reads.parse_parts(&[part("p", &kept)]);
        assert_eq!(reads.held(), 2, "the untaken read waits one generation");
        reads.next_generation();
        assert_eq!(reads.held(), 1, "then only the taken one is held");
        reads.next_generation();
        reads.next_generation();
        assert_eq!(reads.held(), 0);
    }

    #[test]
    fn a_read_keeps_no_output_alive_and_its_output_cannot_change_in_place() {
        let reads = SegmentReads::default();
        let mut kept = output("kept");
        reads.parse_parts(&[part("p", &kept)]);
        assert_eq!(
            Arc::strong_count(&kept),
            1,
            "the read holds no strong reference"
        );
        assert!(
            Arc::get_mut(&mut kept).is_none(),
            "while its read lives, the value cannot be changed where it is"
        );
        let before = Arc::as_ptr(&kept);
        Arc::make_mut(&mut kept)[0]["content"] = json!("changed");
        assert_ne!(Arc::as_ptr(&kept), before, "a change moves the value");
        let read = reads.parse_parts(&[part("p", &kept)]);
        assert_eq!(
            &*read[0].content, "changed",
            "so it is read again, not taken"
        );
    }
}
