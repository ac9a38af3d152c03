//! Checks of `struct` statements before anything runs (LANGUAGE.md §10.1,
//! §10.2): a parent that is a built-in type, a redeclared parent field, and
//! a method assigning `self.NAME` for a name the struct does not declare.

use super::scope::Def;
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
pub(crate) const BUILTIN_TYPES: &[&str] =
    &["int", "float", "str", "bool", "list", "dict", "tuple", "set", "bytes", "range", "slice", "Tensor"];

/// The names a struct declares, its own and (when known) its ancestors':
/// fields, methods, constants. `None` when some ancestor is unknown.
fn declared<'a>(sd: &'a StructDef, parent_of: &dyn Fn(&'a StructDef) -> Parent<'a>, depth: usize) -> Option<Vec<&'a str>> {
    if depth > 100 {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    match parent_of(sd) {
        Parent::None => {}
        Parent::ErrorKind => names.extend(["message", "kind"]),
        Parent::Struct(p) => names.extend(declared(p, parent_of, depth + 1)?),
        Parent::Builtin(_) | Parent::Unknown => return None,
    }
    names.extend(sd.fields.iter().map(|f| f.name.name.as_str()));
    names.extend(sd.consts.iter().map(|c| c.name.name.as_str()));
    names.extend(sd.methods.iter().map(|m| m.name.name.as_str()));
    Some(names)
}

/// The fields of the ancestors of `sd` (when all are known).
fn inherited_fields<'a>(sd: &'a StructDef, parent_of: &dyn Fn(&'a StructDef) -> Parent<'a>, depth: usize) -> Option<Vec<(&'a str, &'a str)>> {
    if depth > 100 {
        return None;
    }
    match parent_of(sd) {
        Parent::None => Some(Vec::new()),
        Parent::ErrorKind => Some(vec![("message", "Error")]),
        Parent::Struct(p) => {
            let mut v = inherited_fields(p, parent_of, depth + 1)?;
            v.extend(p.fields.iter().map(|f| (f.name.name.as_str(), p.name.name.as_str())));
            Some(v)
        }
        Parent::Builtin(_) | Parent::Unknown => None,
    }
}

/// Every diagnostic about `sd` itself.
pub(crate) fn check_struct<'a>(sd: &'a StructDef, parent_of: &dyn Fn(&'a StructDef) -> Parent<'a>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let (Some(base), Parent::Builtin(name)) = (&sd.base, parent_of(sd)) {
        out.push(
            Diagnostic::new(
                ErrorKind::TypeError,
                format!("struct '{}' cannot inherit from the built-in type '{name}'", sd.name.name),
            )
            .label(base.span, "a struct inherits only from a struct or an error kind")
            .help(format!("keep the value in a field instead: 'items: {name}'")),
        );
        return out;
    }
    if let Some(inh) = inherited_fields(sd, parent_of, 0) {
        for f in &sd.fields {
            if let Some((_, owner)) = inh.iter().find(|(n, _)| *n == f.name.name) {
                out.push(
                    Diagnostic::new(
                        ErrorKind::TypeError,
                        format!("struct '{}' redeclares the field '{}' of its parent '{owner}'", sd.name.name, f.name.name),
                    )
                    .label(f.name.span, "already a field of the parent")
                    .help("a child struct adds fields after its parent's; give this one another name or set it in __init__"),
                );
            }
        }
    }
    if let Some(names) = declared(sd, parent_of, 0) {
        for m in &sd.methods {
            let Some(this) = m.params.params.first() else { continue };
            if m.decorators.iter().any(|d| matches!(&d.kind, ExprKind::Name(n) if n == "staticmethod")) {
                continue;
            }
            let mut found = Vec::new();
            self_assignments(&m.body, &this.name.name, &mut found);
            for (attr, span) in found {
                if names.contains(&attr.as_str()) {
                    continue;
                }
                let decl = if m.name.name == "__init__" { "__init__" } else { "a method" };
                out.push(
                    Diagnostic::new(
                        ErrorKind::AttributeError,
                        format!("'{}' object has no field '{attr}'", sd.name.name),
                    )
                    .label(span, format!("{decl} may assign only declared fields"))
                    .help(format!("declare it in the struct body: '{attr}: any' (or with a type and a default)")),
                );
            }
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
            StmtKind::Try { body, handlers, orelse, finalbody } => {
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
