//! Reading a plugin's module graph as source, for diagnostics the engine cannot give: which
//! module imports a name that its target does not export, and *every* such name at once.
//! QuickJS stops at the first missing export and does not say who imported it; an author
//! wants the importing file, the line, and the whole list.

use crate::modules;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use swc_common::sync::Lrc;
use swc_common::{FileName, SourceMap, Span};
use swc_ecma_ast::{
    ExportSpecifier, ImportSpecifier, Module, ModuleDecl, ModuleExportName, ModuleItem,
};
use swc_ecma_parser::{EsSyntax, Parser, StringInput, Syntax, TsSyntax};

/// A parsed module with its source map (for positions).
pub struct Parsed {
    cm: Lrc<SourceMap>,
    pub module: Module,
}

impl Parsed {
    /// 1-based line and column of a span's start.
    pub fn position(&self, span: Span) -> (u32, u32) {
        let loc = self.cm.lookup_char_pos(span.lo);
        (
            u32::try_from(loc.line).unwrap_or(u32::MAX),
            u32::try_from(loc.col.0 + 1).unwrap_or(u32::MAX),
        )
    }
}

/// A module's source as swc reads it: its source map, its file, and its syntax (TypeScript when
/// the path says so).
pub fn source_file(
    path: &Path,
    source: &str,
) -> (Lrc<SourceMap>, Lrc<swc_common::SourceFile>, Syntax) {
    let cm: Lrc<SourceMap> = Default::default();
    let fm = cm.new_source_file(
        Lrc::new(FileName::Real(path.to_path_buf())),
        source.to_string(),
    );
    let syntax = if crate::typescript::is_typescript(path) {
        Syntax::Typescript(TsSyntax::default())
    } else {
        Syntax::Es(EsSyntax::default())
    };
    (cm, fm, syntax)
}

/// Parses a module's source (TypeScript when the path says so); `None` on a syntax error,
/// which the engine reports on its own.
pub fn parse(path: &Path, source: &str) -> Option<Parsed> {
    let (cm, fm, syntax) = source_file(path, source);
    // Parser debug assertions can trip on malformed input; that is "no parse", never a crash.
    let module = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Parser::new(syntax, StringInput::from(&*fm), None)
            .parse_module()
            .ok()
    }))
    .ok()
    .flatten()?;
    Some(Parsed { cm, module })
}

/// Where a module's default export is declared (`export default …`, or `export { x as
/// default }`), 1-based; `None` without one or when the source does not parse.
pub fn default_export_position(path: &Path, source: &str) -> Option<(u32, u32)> {
    let parsed = parse(path, source)?;
    parsed.module.body.iter().find_map(|item| {
        let ModuleItem::ModuleDecl(decl) = item else { return None };
        match decl {
            ModuleDecl::ExportDefaultDecl(d) => Some(parsed.position(d.span)),
            ModuleDecl::ExportDefaultExpr(e) => Some(parsed.position(e.span)),
            ModuleDecl::ExportNamed(named) => named
                .specifiers
                .iter()
                .any(|s| matches!(s, ExportSpecifier::Named(n) if n.exported.as_ref().is_some_and(|e| export_name(e) == "default")))
                .then(|| parsed.position(named.span)),
            _ => None,
        }
    })
}

/// Positions (1-based) of calls `x.name(…)` for the given method names: where each method name
/// is written. Engine stack frames give a call's line, but the column of whatever the engine
/// last recorded (often inside an argument); this gives the call itself.
pub fn method_calls(path: &Path, source: &str, names: &[&str]) -> Vec<(u32, u32)> {
    use swc_ecma_ast::{CallExpr, Callee, Expr, MemberProp};
    use swc_ecma_visit::{Visit, VisitWith};
    struct Calls<'a> {
        names: &'a [&'a str],
        spans: Vec<Span>,
    }
    impl Visit for Calls<'_> {
        fn visit_call_expr(&mut self, call: &CallExpr) {
            if let Callee::Expr(callee) = &call.callee
                && let Expr::Member(member) = &**callee
                && let MemberProp::Ident(prop) = &member.prop
                && self.names.contains(&prop.sym.as_ref())
            {
                self.spans.push(prop.span);
            }
            call.visit_children_with(self);
        }
    }
    let Some(parsed) = parse(path, source) else {
        return Vec::new();
    };
    let mut calls = Calls {
        names,
        spans: Vec::new(),
    };
    parsed.module.visit_with(&mut calls);
    let mut out: Vec<(u32, u32)> = calls
        .spans
        .into_iter()
        .map(|span| parsed.position(span))
        .collect();
    out.sort_unstable();
    out
}

fn export_name(name: &ModuleExportName) -> String {
    match name {
        ModuleExportName::Ident(ident) => ident.sym.to_string(),
        ModuleExportName::Str(s) => s.value.to_string_lossy().into_owned(),
    }
}

/// One named binding a module takes from another: `import { a }` or `export { a } from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedImport {
    pub specifier: String,
    pub name: String,
    pub position: (u32, u32),
}

/// Every named import and named re-export of a module.
pub fn named_imports(parsed: &Parsed) -> Vec<NamedImport> {
    let mut out = Vec::new();
    for item in &parsed.module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        match decl {
            ModuleDecl::Import(import) if !import.type_only => {
                let specifier = import.src.value.to_string_lossy().into_owned();
                for s in &import.specifiers {
                    let (name, span) = match s {
                        ImportSpecifier::Named(named) if !named.is_type_only => (
                            named
                                .imported
                                .as_ref()
                                .map_or_else(|| named.local.sym.to_string(), export_name),
                            named.span,
                        ),
                        ImportSpecifier::Default(d) => ("default".to_string(), d.span),
                        _ => continue,
                    };
                    out.push(NamedImport {
                        specifier: specifier.clone(),
                        name,
                        position: parsed.position(span),
                    });
                }
            }
            ModuleDecl::ExportNamed(export) if !export.type_only => {
                let Some(src) = &export.src else { continue };
                let specifier = src.value.to_string_lossy().into_owned();
                for s in &export.specifiers {
                    if let ExportSpecifier::Named(named) = s
                        && !named.is_type_only
                    {
                        out.push(NamedImport {
                            specifier: specifier.clone(),
                            name: export_name(&named.orig),
                            position: parsed.position(named.span),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Every static import or re-export of one of `specifiers` in a module: the specifier and where
/// the declaration starts (1-based), in source order.
pub fn imports_from(parsed: &Parsed, specifiers: &[&str]) -> Vec<(String, (u32, u32))> {
    let mut out = Vec::new();
    for item in &parsed.module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        let (src, span) = match decl {
            ModuleDecl::Import(import) if !import.type_only => (&import.src, import.span),
            ModuleDecl::ExportNamed(export) if !export.type_only => match &export.src {
                Some(src) => (src, export.span),
                None => continue,
            },
            ModuleDecl::ExportAll(all) if !all.type_only => (&all.src, all.span),
            _ => continue,
        };
        let specifier = src.value.to_string_lossy().into_owned();
        if specifiers.contains(&specifier.as_str()) {
            out.push((specifier, parsed.position(span)));
        }
    }
    out
}

/// Finds a module's path and source from the importing file and a specifier.
pub type SourceLookup<'a> = &'a dyn Fn(&Path, &str) -> Option<(PathBuf, String)>;

/// The names a module exports; `export * from` is followed through `source_of`.
pub fn exported_names(
    path: &Path,
    source: &str,
    source_of: SourceLookup<'_>,
    depth: usize,
) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Some(parsed) = parse(path, source) else {
        return names;
    };
    for item in &parsed.module.body {
        let ModuleItem::ModuleDecl(decl) = item else {
            continue;
        };
        match decl {
            ModuleDecl::ExportDecl(export) => names.extend(declared_names(&export.decl)),
            ModuleDecl::ExportDefaultDecl(_) | ModuleDecl::ExportDefaultExpr(_) => {
                names.insert("default".into());
            }
            ModuleDecl::ExportNamed(export) => {
                for s in &export.specifiers {
                    match s {
                        ExportSpecifier::Named(named) => names
                            .insert(export_name(named.exported.as_ref().unwrap_or(&named.orig))),
                        ExportSpecifier::Namespace(ns) => names.insert(export_name(&ns.name)),
                        ExportSpecifier::Default(d) => names.insert(d.exported.sym.to_string()),
                    };
                }
            }
            ModuleDecl::ExportAll(all) if depth < 16 => {
                if let Some((target, text)) = source_of(path, &all.src.value.to_string_lossy()) {
                    names.extend(
                        exported_names(&target, &text, source_of, depth + 1)
                            .into_iter()
                            .filter(|n| n != "default"),
                    );
                }
            }
            _ => {}
        }
    }
    names
}

fn declared_names(decl: &swc_ecma_ast::Decl) -> Vec<String> {
    use swc_ecma_ast::Decl;
    match decl {
        Decl::Class(c) => vec![c.ident.sym.to_string()],
        Decl::Fn(f) => vec![f.ident.sym.to_string()],
        Decl::Var(v) => v
            .decls
            .iter()
            .flat_map(|d| pattern_names(&d.name))
            .collect(),
        _ => Vec::new(),
    }
}

fn pattern_names(pattern: &swc_ecma_ast::Pat) -> Vec<String> {
    use swc_ecma_ast::{ObjectPatProp, Pat};
    match pattern {
        Pat::Ident(i) => vec![i.id.sym.to_string()],
        Pat::Array(a) => a.elems.iter().flatten().flat_map(pattern_names).collect(),
        Pat::Object(o) => o
            .props
            .iter()
            .flat_map(|p| match p {
                ObjectPatProp::KeyValue(kv) => pattern_names(&kv.value),
                ObjectPatProp::Assign(a) => vec![a.key.sym.to_string()],
                ObjectPatProp::Rest(r) => pattern_names(&r.arg),
            })
            .collect(),
        Pat::Rest(r) => pattern_names(&r.arg),
        Pat::Assign(a) => pattern_names(&a.left),
        _ => Vec::new(),
    }
}

/// A module's source by its engine name: the SDK, zod and built-ins from the binary, plugin
/// modules from the loader's record (`loaded`), never from disk. Relative specifiers resolve
/// against the importing file.
fn source_among(
    loaded: &[modules::LoadedModule],
    importer: &Path,
    specifier: &str,
) -> Option<(PathBuf, String)> {
    if let Some(text) = modules::embedded_source(specifier) {
        return Some((PathBuf::from(specifier), text.to_string()));
    }
    if !(specifier.starts_with("./") || specifier.starts_with("../") || specifier.starts_with('/'))
        || modules::embedded_source(&importer.to_string_lossy()).is_some()
    {
        return None;
    }
    let joined = modules::normalize(&importer.parent()?.join(specifier));
    let candidates = [
        joined.clone(),
        joined.with_extension("js"),
        joined.with_extension("ts"),
        joined.with_extension("mjs"),
    ];
    candidates.into_iter().find_map(|candidate| {
        modules::source_among(loaded, &candidate).map(|text| (candidate, text.to_string()))
    })
}

/// The modules the binary serves only (what the SDK's own entries re-export).
fn embedded_only(_importer: &Path, specifier: &str) -> Option<(PathBuf, String)> {
    modules::embedded_source(specifier).map(|text| (PathBuf::from(specifier), text.to_string()))
}

/// The names the SDK's root entry exports (computed once from its source).
pub fn sdk_root_exports() -> &'static BTreeSet<String> {
    static NAMES: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let source = modules::embedded_source(modules::SDK).unwrap_or_default();
        exported_names(Path::new(modules::SDK), source, &embedded_only, 0)
    })
}

/// For an import of a host-internal package: which of the imported names the SDK offers (the
/// one-line fix) and which it does not.
pub fn host_internal_advice(importer: &Path, source: &str, specifier: &str) -> String {
    let Some(parsed) = parse(importer, source) else {
        return String::new();
    };
    let names: Vec<String> = named_imports(&parsed)
        .into_iter()
        .filter(|i| i.specifier == specifier)
        .map(|i| i.name)
        .collect();
    let sdk = sdk_root_exports();
    let (offered, missing): (Vec<&String>, Vec<&String>) =
        names.iter().partition(|n| sdk.contains(*n));
    let quote = |list: &[&String]| {
        list.iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    if !offered.is_empty() {
        out.push_str(&format!(
            ". The SDK exports {}: import {} from `{}` instead",
            quote(&offered),
            if offered.len() == 1 { "it" } else { "them" },
            modules::SDK
        ));
    }
    if !missing.is_empty() {
        out.push_str(&format!(
            ". {} {} no SDK equivalent: keep a copy in the plugin",
            quote(&missing),
            if missing.len() == 1 { "has" } else { "have" }
        ));
    }
    out
}

/// A module that imports names its target does not export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingExports {
    pub file: PathBuf,
    pub position: (u32, u32),
    pub message: String,
}

/// After QuickJS refused a link with "Could not find export 'x' in module 'M'": every module
/// of the graph that imports from `M`, and every name each takes that `M` does not export.
/// `M` is taken from the message (which plugin code can throw itself), so it counts only when
/// the loader loaded a module of that name (or serves it): the text comes from `loaded`.
pub fn missing_exports(
    error_text: &str,
    loaded: &[modules::LoadedModule],
) -> Option<MissingExports> {
    let module = error_text
        .split("in module '")
        .nth(1)?
        .split('\'')
        .next()?
        .to_string();
    let target_path = PathBuf::from(&module);
    let target_source = modules::embedded_source(&module)
        .map(str::to_string)
        .or_else(|| modules::source_among(loaded, &target_path).map(|s| s.to_string()))?;
    let source_of = |importer: &Path, specifier: &str| source_among(loaded, importer, specifier);
    let exports = exported_names(&target_path, &target_source, &source_of, 0);
    let shown = |p: &Path| -> String {
        // Absolute paths: the host shows them relative to the plugins folder.
        p.display().to_string()
    };
    let mut found: Vec<(PathBuf, (u32, u32), Vec<String>)> = Vec::new();
    for importer in loaded {
        let file = &importer.path;
        let Some(parsed) = parse(file, &importer.source) else {
            continue;
        };
        let mut missing: Vec<(String, (u32, u32))> = Vec::new();
        for import in named_imports(&parsed) {
            let resolved = source_of(file, &import.specifier).map(|(p, _)| p);
            let same =
                import.specifier == module || resolved.as_deref() == Some(target_path.as_path());
            if same
                && !exports.contains(&import.name)
                && !missing.iter().any(|(n, _)| *n == import.name)
            {
                missing.push((import.name, import.position));
            }
        }
        if let Some((_, first)) = missing.first() {
            found.push((
                file.clone(),
                *first,
                missing.into_iter().map(|(n, _)| n).collect(),
            ));
        }
    }
    let (file, position, _) = found.first().cloned()?;
    let parts: Vec<String> = found
        .iter()
        .map(|(f, (line, _), names)| {
            let list = names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{}:{line} imports {list}", shown(f))
        })
        .collect();
    let message = format!(
        "import failed: `{}` does not export what is imported from it — {}",
        shown(&target_path),
        parts.join("; ")
    );
    Some(MissingExports {
        file,
        position,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_imports_and_reexports_have_positions() {
        let source = "import { a, b as c } from \"m\";\nimport type { T } from \"m\";\nexport { d } from './x.js';\n";
        let parsed = parse(Path::new("f.ts"), source).expect("parses");
        let found: Vec<(String, String, (u32, u32))> = named_imports(&parsed)
            .into_iter()
            .map(|i| (i.specifier, i.name, i.position))
            .collect();
        assert_eq!(
            found,
            vec![
                ("m".into(), "a".into(), (1, 10)),
                ("m".into(), "b".into(), (1, 13)),
                ("./x.js".into(), "d".into(), (3, 10))
            ]
        );
    }

    #[test]
    fn exported_names_cover_every_form() {
        let source = "export const a = 1, { b } = {};\nexport function f() {}\nexport class K {}\nconst x = 1; export { x as y };\nexport default 3;\n";
        let names = exported_names(Path::new("m.js"), source, &|_: &Path, _: &str| None, 0);
        assert_eq!(
            names.into_iter().collect::<Vec<_>>(),
            ["K", "a", "b", "default", "f", "y"]
        );
    }
}
