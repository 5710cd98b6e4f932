//! What a throw looks like to the host: the exception taken off the context, and the first
//! `path:line:col` it points at.

use super::*;

pub(super) struct Thrown {
    pub(super) name: String,
    pub(super) message: String,
    pub(super) stack: Option<String>,
}

impl Thrown {
    pub(super) fn text(&self) -> String {
        if self.name.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.name, self.message)
        }
    }
}

/// The most of a thrown error's name, message or stack the host keeps.
const THROWN_TEXT_CHARS: usize = 16 * 1024;

/// Takes the pending exception off the context. Its `name`, `message` and `stack` may be
/// getters (plugin code): they run under the deadline of the code that threw, and only strings
/// are kept, clipped.
pub(super) fn thrown(ctx: &Ctx<'_>) -> Thrown {
    let value = ctx.catch();
    if let Some(exception) = value.as_exception() {
        let text = |name: &str| -> Option<String> {
            let value: Value = exception.get(name).ok()?;
            let text = value.as_string()?.to_string().ok()?;
            Some(clip(text))
        };
        return Thrown {
            name: text("name").unwrap_or_default(),
            message: text("message").unwrap_or_default(),
            stack: text("stack"),
        };
    }
    let message = if let Some(s) = value.as_string() {
        s.to_string().map(clip).unwrap_or_default()
    } else {
        from_js_within(
            &value,
            ConversionBudget::THROWN,
            &crate::deadline::current_expired,
        )
        .map(|v| clip(v.to_string()))
        .unwrap_or_else(|_| "a non-error value was thrown".into())
    };
    Thrown {
        name: String::new(),
        message: format!("threw {message}"),
        stack: None,
    }
}

fn clip(mut text: String) -> String {
    if text.len() > THROWN_TEXT_CHARS {
        text.truncate(text.floor_char_boundary(THROWN_TEXT_CHARS));
        text.push('…');
    }
    text
}

/// The first `path:line:col` in a stack or message, for diagnostics.
pub(super) fn first_frame(stack: &str) -> Option<(PathBuf, (u32, u32))> {
    for token in stack.split(|c: char| c.is_whitespace() || c == '(' || c == ')') {
        let mut parts = token.rsplitn(3, ':');
        let (Some(col), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(line), Ok(col)) = (
            line.parse::<u32>(),
            col.trim_end_matches([',', '.']).parse::<u32>(),
        ) else {
            continue;
        };
        if file.starts_with('/') || file.contains(".js") || file.contains(".mjs") {
            return Some((PathBuf::from(file), (line, col)));
        }
    }
    None
}

/// The first frame of a stack or message that names a module the loader loaded.
pub(super) fn first_frame_in(
    text: &str,
    loaded: &[crate::modules::LoadedModule],
) -> Option<(PathBuf, (u32, u32))> {
    text.lines()
        .filter_map(first_frame)
        .find(|(file, _)| crate::modules::source_among(loaded, file).is_some())
}

pub(super) fn short(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
