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

/// Takes the pending exception off the context.
pub(super) fn thrown(ctx: &Ctx<'_>) -> Thrown {
    let value = ctx.catch();
    if let Some(exception) = value.as_exception() {
        let name = exception
            .get::<_, Option<String>>("name")
            .ok()
            .flatten()
            .unwrap_or_default();
        return Thrown {
            name,
            message: exception.message().unwrap_or_default(),
            stack: exception.stack(),
        };
    }
    let message = if let Some(s) = value.as_string() {
        s.to_string().unwrap_or_default()
    } else {
        from_js(&value)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| "a non-error value was thrown".into())
    };
    Thrown {
        name: String::new(),
        message: format!("threw {message}"),
        stack: None,
    }
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

pub(super) fn short(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
