//! Diagnostics: how the kernel reports a problem with a plugin to its author.
//!
//! A bad plugin is a value, never a panic. Every diagnostic carries a stable machine code
//! (documented in `ARCHITECTURE.md`), the plugin it concerns, the file, and where the source
//! gives them a line and a column, so an editor can jump straight to the fault.

use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// Stable diagnostic codes. The string form is part of the CLI's JSON contract: never rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// PLUGIN.md or RUNTIME.md could not be read.
    ManifestUnreadable,
    /// The file does not start with a plain `---` YAML frontmatter block.
    ManifestFrontmatter,
    /// The YAML is malformed or does not match the manifest schema (unknown key, wrong type…).
    ManifestSchema,
    /// `id` differs from the plugin's folder name.
    IdMismatch,
    /// A field value breaks a format rule (id pattern, contract id pattern, entry path…).
    InvalidField,
    /// A contract version that is no longer current (e.g. `history.compact@1`).
    RetiredContract,
    /// A kernel extension point or slot that does not exist.
    UnknownContract,
    /// `conflicts` names a kernel extension point or UI slot.
    InvalidConflict,
    /// A `role:` tag, replaced by contracts upstream.
    RoleTag,
    /// The entry module (or a file it names) does not exist.
    MissingFile,
    /// A path leaves the plugin root.
    PathEscapesRoot,
    /// A file the plugin supplies is not a regular file (a FIFO, a device, a folder).
    NotRegularFile,
    /// A file the plugin supplies is over the size limit.
    FileTooLarge,
    /// A file the plugin supplies is not UTF-8 text.
    NotUtf8,
    /// A module the entry's graph needs exists but cannot be read (permissions, I/O).
    FileUnreadable,
    /// A child `runtimes/<id>/PLUGIN.md`, or an inline runtime beside `runtimes/`.
    RuntimeLayout,
    /// The entry failed to compile (syntax error) or import.
    EntrySyntax,
    /// The entry module threw or its returned promise rejected.
    EntryThrew,
    /// The entry did not settle within the load time limit, or looped.
    EntryTimeout,
    /// The entry's default export is not a function.
    EntryShape,
    /// An import names a module the sandbox does not provide (or an SDK export that is missing).
    ImportUnavailable,
    /// A TypeScript construct that type stripping refuses (`enum`, value `namespace`,
    /// parameter properties, `import x =`): it generates code rather than only types.
    TypescriptUnsupported,
    /// `provideExtension` for a `{point, id}` that `contributes.extensions` does not declare.
    UndeclaredExtension,
    /// A declared extension the entry never provided.
    MissingExtension,
    /// The same extension provided twice.
    DuplicateExtension,
    /// `provideExtension` with an unknown point, a non-function handler or a bad id.
    InvalidExtension,
    /// The reserved `static-prompt` id declared or provided by the plugin itself.
    ReservedExtensionId,
    /// A tool, action, service, form, wire or hook registered but not declared (or twice).
    UndeclaredRegistration,
    /// A declared tool, action, service, form, wire or hook never registered.
    MissingRegistration,
    /// A registration made after the entry's factory settled.
    RegistrationClosed,
    /// The test session file is malformed.
    SessionSchema,
    /// A hint, not an error: `ctx.pluginData.get(…)` read in the row shape of older Covel
    /// versions (`?.value`), which gives `undefined` now that `get` returns the value itself.
    RowShapedRead,
    /// A note, not an error: an import of upstream's workspace packages (`@covel/shared`,
    /// `@covel/tools`), served for bundled plugins; a community plugin imports the same names
    /// from the SDK.
    WorkspacePackageImport,
    /// A warning, not an error: a `{{ … }}` placeholder in a PLUGIN.md body whose root the
    /// studio does not fill (only `world` and `userSettings` are), so it reaches the prompt as
    /// written.
    UnknownTemplateRoot,
    /// Anything else a loader could not classify; the message says what.
    Internal,
}

impl Code {
    /// Every code, in declaration order (for documentation checks).
    pub const ALL: [Code; 35] = [
        Code::ManifestUnreadable,
        Code::ManifestFrontmatter,
        Code::ManifestSchema,
        Code::IdMismatch,
        Code::InvalidField,
        Code::RetiredContract,
        Code::UnknownContract,
        Code::InvalidConflict,
        Code::RoleTag,
        Code::MissingFile,
        Code::PathEscapesRoot,
        Code::NotRegularFile,
        Code::FileTooLarge,
        Code::NotUtf8,
        Code::FileUnreadable,
        Code::RuntimeLayout,
        Code::EntrySyntax,
        Code::EntryThrew,
        Code::EntryTimeout,
        Code::EntryShape,
        Code::ImportUnavailable,
        Code::TypescriptUnsupported,
        Code::UndeclaredExtension,
        Code::MissingExtension,
        Code::DuplicateExtension,
        Code::InvalidExtension,
        Code::ReservedExtensionId,
        Code::UndeclaredRegistration,
        Code::MissingRegistration,
        Code::RegistrationClosed,
        Code::SessionSchema,
        Code::RowShapedRead,
        Code::WorkspacePackageImport,
        Code::UnknownTemplateRoot,
        Code::Internal,
    ];

    /// The stable string form, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ManifestUnreadable => "manifest-unreadable",
            Code::ManifestFrontmatter => "manifest-frontmatter",
            Code::ManifestSchema => "manifest-schema",
            Code::IdMismatch => "id-mismatch",
            Code::InvalidField => "invalid-field",
            Code::RetiredContract => "retired-contract",
            Code::UnknownContract => "unknown-contract",
            Code::InvalidConflict => "invalid-conflict",
            Code::RoleTag => "role-tag",
            Code::MissingFile => "missing-file",
            Code::PathEscapesRoot => "path-escapes-root",
            Code::NotRegularFile => "not-regular-file",
            Code::FileTooLarge => "file-too-large",
            Code::NotUtf8 => "not-utf8",
            Code::FileUnreadable => "file-unreadable",
            Code::RuntimeLayout => "runtime-layout",
            Code::EntrySyntax => "entry-syntax",
            Code::EntryThrew => "entry-threw",
            Code::EntryTimeout => "entry-timeout",
            Code::EntryShape => "entry-shape",
            Code::ImportUnavailable => "import-unavailable",
            Code::TypescriptUnsupported => "typescript-unsupported",
            Code::UndeclaredExtension => "undeclared-extension",
            Code::MissingExtension => "missing-extension",
            Code::DuplicateExtension => "duplicate-extension",
            Code::InvalidExtension => "invalid-extension",
            Code::ReservedExtensionId => "reserved-extension-id",
            Code::UndeclaredRegistration => "undeclared-registration",
            Code::MissingRegistration => "missing-registration",
            Code::RegistrationClosed => "registration-closed",
            Code::SessionSchema => "session-schema",
            Code::RowShapedRead => "row-shaped-read",
            Code::WorkspacePackageImport => "workspace-package-import",
            Code::UnknownTemplateRoot => "unknown-template-root",
            Code::Internal => "internal",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem found in a plugin or a session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub message: String,
    /// The plugin concerned, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// The file, relative to the plugins folder where possible.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// 1-based line, when the source gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column, when the source gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            plugin: None,
            file: None,
            line: None,
            column: None,
        }
    }

    pub fn plugin(mut self, plugin: impl Into<String>) -> Self {
        self.plugin = Some(plugin.into());
        self
    }

    pub fn file(mut self, file: impl AsRef<Path>) -> Self {
        self.file = Some(file.as_ref().to_path_buf());
        self
    }

    pub fn at(mut self, line: u32, column: u32) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
    }

    /// Applies a position only when one is known.
    pub fn at_opt(self, position: Option<(u32, u32)>) -> Self {
        match position {
            Some((line, column)) => self.at(line, column),
            None => self,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}", file.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
                if let Some(column) = self.column {
                    write!(f, ":{column}")?;
                }
            }
            write!(f, ": ")?;
        }
        write!(f, "[{}] {}", self.code, self.message)
    }
}
