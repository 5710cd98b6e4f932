//! Source checks of plugin modules that are not errors but lead an author to a fix: reads of
//! `ctx.pluginData.get(…)` in the row shape of older Covel versions
//! (`(await ctx.pluginData.get(ns, key))?.value`; the seed page decides that `get` returns the
//! stored value itself, so such a read gives `undefined`), and imports of upstream's workspace
//! packages, which the sandbox serves for bundled plugins but a community plugin takes from the
//! SDK.

use crate::imports;
use std::collections::BTreeSet;
use std::path::Path;
use swc_ecma_ast::{
    AwaitExpr, CallExpr, Callee, Expr, MemberExpr, MemberProp, ObjectPatProp, Pat, PropName,
    VarDeclarator,
};
use swc_ecma_visit::{Visit, VisitWith};

/// One finding (a row-shaped read, a workspace-package import): where, and the line that fixes
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowShapedRead {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

const FIX: &str = "`ctx.pluginData.get(namespace, key)` returns the stored value itself (or null), not a row: read `await ctx.pluginData.get(namespace, key)` directly instead of its `.value`";

/// Finds row-shaped `pluginData.get` reads in one module's source.
pub fn row_shaped_reads(path: &Path, source: &str) -> Vec<RowShapedRead> {
    if !source.contains("pluginData") {
        return Vec::new();
    }
    let Some(parsed) = imports::parse(path, source) else {
        return Vec::new();
    };
    let mut finder = Finder {
        rows: BTreeSet::new(),
        found: Vec::new(),
    };
    // Two passes: first the names bound to a `get` result, then their `.value` reads (a binding
    // may be declared after the function that reads it).
    finder.collect_bindings(&parsed.module);
    parsed.module.visit_with(&mut finder);
    let mut out: Vec<RowShapedRead> = finder
        .found
        .into_iter()
        .map(|(span, what)| {
            let (line, column) = parsed.position(span);
            RowShapedRead {
                line,
                column,
                message: format!("{what}: {FIX}"),
            }
        })
        .collect();
    out.sort_by_key(|r| (r.line, r.column));
    out.dedup_by_key(|r| (r.line, r.column));
    out
}

/// Finds imports of upstream's workspace packages (`@covel/shared`, `@covel/tools`) in one
/// module's source: one note per import declaration, naming the SDK as the place to import from.
pub fn workspace_package_imports(path: &Path, source: &str) -> Vec<RowShapedRead> {
    let packages: Vec<&str> = crate::modules::WORKSPACE_PACKAGES
        .iter()
        .map(|(name, _)| *name)
        .collect();
    if !packages.iter().any(|p| source.contains(p)) {
        return Vec::new();
    }
    let Some(parsed) = imports::parse(path, source) else {
        return Vec::new();
    };
    imports::imports_from(&parsed, &packages)
        .into_iter()
        .map(|(specifier, (line, column))| RowShapedRead {
            line,
            column,
            message: format!(
                "`{specifier}` is a workspace package of upstream Covel, served here for its bundled plugins (the SDK names they import from it); a community plugin imports these names from `{}`",
                crate::modules::SDK
            ),
        })
        .collect()
}

struct Finder {
    /// Names bound to `await …pluginData.get(…)`.
    rows: BTreeSet<String>,
    found: Vec<(swc_common::Span, String)>,
}

/// Strips parentheses, `await`, TypeScript `as`/`!` wrappers.
fn unwrap(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => unwrap(&p.expr),
        Expr::Await(AwaitExpr { arg, .. }) => unwrap(arg),
        Expr::TsAs(t) => unwrap(&t.expr),
        Expr::TsNonNull(t) => unwrap(&t.expr),
        Expr::TsSatisfies(t) => unwrap(&t.expr),
        other => other,
    }
}

/// Whether an expression is a call of `<x>.pluginData.get(…)` or `pluginData.get(…)`.
fn is_plugin_data_get(expr: &Expr) -> bool {
    let Expr::Call(CallExpr {
        callee: Callee::Expr(callee),
        ..
    }) = unwrap(expr)
    else {
        return false;
    };
    let Expr::Member(MemberExpr {
        obj,
        prop: MemberProp::Ident(method),
        ..
    }) = unwrap(callee)
    else {
        return false;
    };
    if method.sym != *"get" {
        return false;
    }
    match unwrap(obj) {
        Expr::Ident(ident) => ident.sym == *"pluginData",
        Expr::Member(MemberExpr {
            prop: MemberProp::Ident(name),
            ..
        }) => name.sym == *"pluginData",
        Expr::OptChain(chain) => {
            matches!(&*chain.base, swc_ecma_ast::OptChainBase::Member(MemberExpr { prop: MemberProp::Ident(name), .. }) if name.sym == *"pluginData")
        }
        _ => false,
    }
}

impl Finder {
    fn collect_bindings(&mut self, module: &swc_ecma_ast::Module) {
        struct Bindings<'a>(&'a mut BTreeSet<String>);
        impl Visit for Bindings<'_> {
            fn visit_var_declarator(&mut self, node: &VarDeclarator) {
                if let (Pat::Ident(name), Some(init)) = (&node.name, &node.init)
                    && is_plugin_data_get(init)
                {
                    self.0.insert(name.id.sym.to_string());
                }
                node.visit_children_with(self);
            }
        }
        module.visit_with(&mut Bindings(&mut self.rows));
    }
}

impl Visit for Finder {
    fn visit_member_expr(&mut self, node: &MemberExpr) {
        if let MemberProp::Ident(prop) = &node.prop
            && prop.sym == *"value"
        {
            if is_plugin_data_get(&node.obj) {
                self.found.push((
                    node.span,
                    "`.value` read on the result of `pluginData.get`".to_string(),
                ));
            } else if let Expr::Ident(ident) = unwrap(&node.obj)
                && self.rows.contains(&ident.sym.to_string())
            {
                self.found.push((
                    node.span,
                    format!("`{}.value` reads a row from `pluginData.get`", ident.sym),
                ));
            }
        }
        node.visit_children_with(self);
    }

    fn visit_var_declarator(&mut self, node: &VarDeclarator) {
        if let (Pat::Object(pattern), Some(init)) = (&node.name, &node.init)
            && is_plugin_data_get(init)
            && pattern.props.iter().any(|p| match p {
                ObjectPatProp::KeyValue(kv) => {
                    matches!(&kv.key, PropName::Ident(k) if k.sym == *"value")
                }
                ObjectPatProp::Assign(a) => a.key.sym == *"value",
                ObjectPatProp::Rest(_) => false,
            })
        {
            self.found.push((
                pattern.span,
                "`{ value }` destructured from the result of `pluginData.get`".to_string(),
            ));
        }
        node.visit_children_with(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_shaped_form_is_found_with_its_position() {
        let source = "export async function h(ctx) {\n  const a = (await ctx.pluginData.get(\"n\", \"k\"))?.value;\n  const row = await ctx.pluginData.get(\"n\", \"k\");\n  const b = row?.value ?? 0;\n  const { value } = await ctx.pluginData.get(\"n\", \"k\");\n  const fine = await ctx.pluginData.get(\"n\", \"k\");\n  return [a, b, value, fine];\n}\n";
        let found: Vec<(u32, u32)> = row_shaped_reads(Path::new("x.js"), source)
            .into_iter()
            .map(|r| (r.line, r.column))
            .collect();
        assert_eq!(found, vec![(2, 13), (4, 13), (5, 9)]);
    }

    #[test]
    fn value_shaped_reads_are_not_flagged() {
        let source = "export const h = async (ctx) => { const mood = await ctx.pluginData.get('n', 'k'); return mood?.level; };";
        assert!(row_shaped_reads(Path::new("x.js"), source).is_empty());
    }
}
