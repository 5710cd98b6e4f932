//! Splitting a Markdown manifest into its YAML frontmatter and its body.

/// A manifest file split in two, with the 1-based file line the YAML starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    pub yaml: &'a str,
    pub body: &'a str,
    /// File line of the YAML's first line, to translate YAML positions into file positions.
    pub yaml_first_line: u32,
    /// File line of the body's first line (after the closing `---`).
    pub body_first_line: u32,
}

/// Why a file has no plain YAML frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    #[error("the file must start with a `---` line opening a plain YAML frontmatter block")]
    NoOpening,
    #[error(
        "`{0}` opens an engine-specific frontmatter; manifests need plain YAML between `---` lines"
    )]
    EngineDirective(String),
    #[error("the frontmatter opened on line 1 is never closed by a `---` line")]
    Unclosed,
}

/// Splits `---\n<yaml>\n---\n<body>`; an optional byte-order mark is allowed and the block
/// may be empty.
pub fn split(text: &str) -> Result<Split<'_>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_end = text.find('\n').unwrap_or(text.len());
    let first = text[..first_end].trim_end_matches('\r');
    if first != "---" {
        if let Some(directive) = first.strip_prefix("---") {
            if !directive.trim().is_empty() {
                return Err(FrontmatterError::EngineDirective(first.to_string()));
            }
        } else {
            return Err(FrontmatterError::NoOpening);
        }
    }
    let rest_start = (first_end + 1).min(text.len());
    let rest = &text[rest_start..];
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            let yaml = &rest[..offset];
            let body = &rest[offset + line.len()..];
            let yaml_lines = u32::try_from(yaml.matches('\n').count()).unwrap_or(u32::MAX);
            return Ok(Split {
                yaml,
                body,
                yaml_first_line: 2,
                body_first_line: yaml_lines.saturating_add(3),
            });
        }
        offset += line.len();
    }
    Err(FrontmatterError::Unclosed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_yaml_and_body() {
        let s = split("---\nid: a\n---\n# Body\n").expect("valid");
        assert_eq!(s.yaml, "id: a\n");
        assert_eq!(s.body, "# Body\n");
    }

    #[test]
    fn empty_block_and_bom_are_allowed() {
        let s = split("\u{feff}---\n---\n").expect("valid");
        assert_eq!(s.yaml, "");
    }

    #[test]
    fn rejects_engine_directives_and_missing_fences() {
        assert!(matches!(
            split("---js\nx\n---\n"),
            Err(FrontmatterError::EngineDirective(_))
        ));
        assert_eq!(split("id: a\n"), Err(FrontmatterError::NoOpening));
        assert_eq!(split("---\nid: a\n"), Err(FrontmatterError::Unclosed));
    }
}
