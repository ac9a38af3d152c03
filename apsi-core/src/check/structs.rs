//! Checks of `struct` statements before anything runs (LANGUAGE.md §10.1,
//! §10.2): a parent that is a built-in type, a redeclared parent field, and
//! a method assigning `self.NAME` for a name the struct does not declare.

use super::defs::Def;
use crate::diagnostic::Diagnostic;
use crate::error::ErrorKind;
use crate::syntax::ast::*;

/// What a struct's parent expression names, as far as the checker knows.
pub(crate) enum Parent<'a> {
    None,
    Struct(&'a StructDef),
    /// A built-in error kind (`Error`, `ValueError`, …): adds `message`.
    ErrorKind,
    /// A built-in type that cannot be a parent (`list`, `int`, …).
    Builtin(String),
    /// Not known statically (a module's struct, a rebound name).
    Unknown,
}

/// The built-in types a struct cannot inherit from.
pub(crate) const BUILTIN_TYPES: &[&str] = &[
    "int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes", "range", "slice", "Tensor",
];

/// The ancestors of `sd`, nearest first, and whether the chain ends in a
/// built-in error kind; `None` when an ancestor is not known statically
/// (or is a built-in type).
fn ancestors<'a>(
    sd: &'a StructDef,
    parent_of: &dyn Fn(&'a StructDef) -> Parent<'a>,
) -> Option<(Vec<&'a StructDef>, bool)> {
    let mut chain: Vec<&'a StructDef> = Vec::new();
    let mut cur = sd;
    while chain.len() <= 100 {
        match parent_of(cur) {
            Parent::None => return Some((chain, false)),
            Parent::ErrorKind => return Some((chain, true)),
            Parent::Struct(p) => {
                chain.push(p);
                cur = p;
            }
            Parent::Builtin(_) | Parent::Unknown => return None,
        }
    }
    None
}

/// The fields `sd` inherits, each with the struct that declares it, in order.
fn inherited_fields<'a>(chain: &[&'a StructDef], error_root: bool) -> Vec<(&'a str, &'a str)> {
    let mut v: Vec<(&str, &str)> = if error_root {
        vec![("message", "Error")]
    } else {
        Vec::new()
    };
    for p in chain.iter().rev() {
        v.extend(p.fields.iter().map(|f| (f.name.name.as_str(), p.name.name.as_str())));
    }
    v
}

/// Every name an instance of `sd` has: fields, constants and methods, its
/// own and its ancestors' (and an error kind's `message` and `kind`).
fn declared<'a>(sd: &'a StructDef, chain: &[&'a StructDef], error_root: bool) -> Vec<&'a str> {
    let mut names: Vec<&str> = if error_root {
        vec!["message", "kind"]
    } else {
        Vec::new()
    };
    for d in chain.iter().copied().chain(std::iter::once(sd)) {
        names.extend(d.fields.iter().map(|f| f.name.name.as_str()));
        names.extend(d.consts.iter().map(|c| c.name.name.as_str()));
        names.extend(d.methods.iter().map(|m| m.name.name.as_str()));
    }
    names
}

/// Every diagnostic about `sd` itself.
pub(crate) fn check_struct<'a>(sd: &'a StructDef, parent_of: &dyn Fn(&'a StructDef) -> Parent<'a>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let (Some(base), Parent::Builtin(name)) = (&sd.base, parent_of(sd)) {
        out.push(
            Diagnostic::new(
                ErrorKind::TypeError,
                format!(
                    "struct '{}' cannot inherit from the built-in type '{name}'",
                    sd.name.name
                ),
            )
            .label(base.span, "a struct inherits only from a struct or an error kind")
            .help(format!("keep the value in a field instead: 'items: {name}'")),
        );
        return out;
    }
    let Some((chain, error_root)) = ancestors(sd, parent_of) else {
        return out;
    };
    let inh = inherited_fields(&chain, error_root);
    for f in &sd.fields {
        if let Some((_, owner)) = inh.iter().find(|(n, _)| *n == f.name.name) {
            out.push(
                Diagnostic::new(
                    ErrorKind::TypeError,
                    format!(
                        "struct '{}' redeclares the field '{}' of its parent '{owner}'",
                        sd.name.name, f.name.name
                    ),
                )
                .label(f.name.span, "already a field of the parent")
                .help(
                    "a child struct adds fields after its parent's; give this one another name or set it in __init__",
                ),
            );
        }
    }
    let names = declared(sd, &chain, error_root);
    for m in &sd.methods {
        let Some(this) = m.params.params.first() else { continue };
        if m.decorators
            .iter()
            .any(|d| matches!(&d.kind, ExprKind::Name(n) if n == "staticmethod"))
        {
            continue;
        }
        let mut found = Vec::new();
        self_assignments(&m.body, &this.name.name, &mut found);
        for (attr, span) in found {
            if names.contains(&attr.as_str()) {
                continue;
            }
            let decl = if m.name.name == "__init__" {
                "__init__"
            } else {
                "a method"
            };
            out.push(
                Diagnostic::new(
                    ErrorKind::AttributeError,
                    format!("'{}' object has no field '{attr}'", sd.name.name),
                )
                .label(span, format!("{decl} may assign only declared fields"))
                .help(format!(
                    "declare it in the struct body: '{attr}: any' (or with a type and a default)"
                )),
            );
        }
    }
    out
}

/// `self.NAME = …` (and `self.NAME += …`) anywhere in a method body, not
/// counting nested functions (whose `self` may be another value).
fn self_assignments(body: &[Stmt], this: &str, out: &mut Vec<(String, crate::diagnostic::Span)>) {
    for s in body {
        match &s.kind {
            StmtKind::Assign { targets, .. } => targets.iter().for_each(|t| target(t, this, out)),
            StmtKind::AugAssign { target: t, .. } => target(t, this, out),
            StmtKind::AnnAssign { target: t, .. } => target(t, this, out),
            StmtKind::For { target: t, body, .. } => {
                target(t, this, out);
                self_assignments(body, this, out);
            }
            StmtKind::If { body, orelse, .. } => {
                self_assignments(body, this, out);
                self_assignments(orelse, this, out);
            }
            StmtKind::While { body, .. } | StmtKind::With { body, .. } => self_assignments(body, this, out),
            StmtKind::Try {
                body,
                handlers,
                orelse,
                finalbody,
            } => {
                self_assignments(body, this, out);
                for h in handlers {
                    self_assignments(&h.body, this, out);
                }
                self_assignments(orelse, this, out);
                self_assignments(finalbody, this, out);
            }
            _ => {}
        }
    }
}

fn target(t: &Expr, this: &str, out: &mut Vec<(String, crate::diagnostic::Span)>) {
    match &t.kind {
        ExprKind::Attribute { value, attr } => {
            if matches!(&value.kind, ExprKind::Name(n) if n == this) {
                out.push((attr.name.clone(), t.span));
            }
        }
        ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().for_each(|x| target(x, this, out)),
        ExprKind::Starred(x) => target(x, this, out),
        _ => {}
    }
}

/// Whether a call of this definition can be checked statically: a struct
/// with a parent and no `__init__` of its own takes its parent's fields.
pub(crate) fn call_checkable(def: Def<'_>) -> bool {
    match def {
        Def::Struct(sd) => sd.base.is_none() || sd.methods.iter().any(|m| m.name.name == "__init__"),
        Def::Func(_) => true,
    }
}
