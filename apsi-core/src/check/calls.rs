//! Checks of calls whose callee is known statically (an undecorated `def` or
//! `struct` bound once): argument count, keywords (Python's wording), and
//! literals of the wrong type for annotated parameters. Whatever a `*xs` or
//! `**kw` argument could supply is not judged.

use super::defs::Def;
use crate::diagnostic::{Diagnostic, Span};
use crate::error::ErrorKind;
use crate::syntax::ast::*;
use crate::text::name_list;

struct P<'a> {
    name: &'a Ident,
    required: bool,
    annotation: Option<&'a Expr>,
}

struct Sig<'a> {
    name: &'a Ident,
    /// A struct's constants (`NAME = value` in its body), for the hint
    /// when one is used as a field (the rule changed: they were fields).
    consts: &'a [StructConst],
    is_struct: bool,
    params: Vec<P<'a>>,
    vararg: Option<&'a Param>,
    kwonly: Vec<P<'a>>,
    kwarg: Option<&'a Param>,
}

fn p(param: &Param) -> P<'_> {
    P {
        name: &param.name,
        required: param.default.is_none(),
        annotation: param.annotation.as_ref(),
    }
}

fn sig_of(def: Def<'_>) -> Sig<'_> {
    match def {
        Def::Func(f) => Sig {
            name: &f.name,
            consts: &[],
            is_struct: false,
            params: f.params.params.iter().map(p).collect(),
            vararg: f.params.vararg.as_ref(),
            kwonly: f.params.kwonly.iter().map(p).collect(),
            kwarg: f.params.kwarg.as_ref(),
        },
        Def::Struct(sd) if sd.methods.iter().any(|m| m.name.name == "__init__") => {
            let init = sd.methods.iter().find(|m| m.name.name == "__init__");
            let params: Vec<P<'_>> = init
                .map(|f| f.params.params.iter().skip(1).map(p).collect())
                .unwrap_or_default();
            Sig {
                name: &sd.name,
                consts: &[],
                is_struct: false,
                params,
                vararg: init.and_then(|f| f.params.vararg.as_ref()),
                kwonly: init
                    .map(|f| f.params.kwonly.iter().map(p).collect())
                    .unwrap_or_default(),
                kwarg: init.and_then(|f| f.params.kwarg.as_ref()),
            }
        }
        Def::Struct(sd) => Sig {
            name: &sd.name,
            consts: &sd.consts,
            is_struct: true,
            params: sd
                .fields
                .iter()
                .map(|fl| P {
                    name: &fl.name,
                    required: fl.default.is_none(),
                    annotation: fl.annotation.as_ref(),
                })
                .collect(),
            vararg: None,
            kwonly: Vec::new(),
            kwarg: None,
        },
    }
}

impl Sig<'_> {
    /// `f(a, b=…, *rest, c, **kw)` as a reader would write it.
    fn text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let show = |q: &P| {
            if q.required {
                q.name.name.clone()
            } else {
                format!("{}=…", q.name.name)
            }
        };
        parts.extend(self.params.iter().map(show));
        if let Some(v) = self.vararg {
            parts.push(format!("*{}", v.name.name));
        } else if !self.kwonly.is_empty() {
            parts.push("*".to_string());
        }
        parts.extend(self.kwonly.iter().map(show));
        if let Some(k) = self.kwarg {
            parts.push(format!("**{}", k.name.name));
        }
        format!("{}({})", self.name.name, parts.join(", "))
    }

    fn hint(&self) -> String {
        if self.is_struct {
            format!("the struct's fields, in order, are {}", self.text())
        } else {
            format!("the function is defined as {}", self.text())
        }
    }

    fn error(&self, msg: String, call: Span, label: &str) -> Diagnostic {
        let what = if self.is_struct { "struct" } else { "function" };
        let help = match self.consts.first() {
            Some(c) => format!("{}; {}", self.hint(), const_hint(c)),
            None => self.hint(),
        };
        Diagnostic::new(ErrorKind::TypeError, msg)
            .label(call, label)
            .label(self.name.span, format!("{what} '{}' defined here", self.name.name))
            .help(help)
    }
}

/// "'x' is a constant …: declare it as 'x: any = 0'".
fn const_hint(c: &StructConst) -> String {
    let v = match &c.value.kind {
        ExprKind::Int(i) => i.to_string(),
        ExprKind::Float(f) => crate::text::float_repr(*f),
        ExprKind::Str(t) => crate::text::quote_str(t),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::None => "none".to_string(),
        ExprKind::List(xs) if xs.is_empty() => "[]".to_string(),
        _ => "…".to_string(),
    };
    format!(
        "'{}' is a constant (assigned without a type in the struct body); to make it a field, declare it as '{}: any = {v}'",
        c.name.name, c.name.name
    )
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Checks a call against the callee's signature. Reports the first arity
/// problem (as Python does) and every literal of the wrong type.
pub(crate) fn check_call(def: Def<'_>, call: Span, args: &[Arg]) -> Vec<Diagnostic> {
    let sig = sig_of(def);
    let fname = format!("{}()", sig.name.name);
    let has_star = args.iter().any(|a| matches!(a, Arg::Star(_)));
    let has_dstar = args.iter().any(|a| matches!(a, Arg::DoubleStar(_)));
    let positional: Vec<&Expr> = args
        .iter()
        .filter_map(|a| if let Arg::Positional(x) = a { Some(x) } else { None })
        .collect();
    let keywords: Vec<(&Ident, &Expr)> = args
        .iter()
        .filter_map(|a| if let Arg::Keyword(k, x) = a { Some((k, x)) } else { None })
        .collect();
    let npos = positional.len();

    // Too many positional arguments.
    if sig.vararg.is_none() && npos > sig.params.len() {
        let max = sig.params.len();
        let min = sig.params.iter().filter(|q| q.required).count();
        let takes = if min == max {
            plural(max, "positional argument", "positional arguments")
        } else {
            format!("from {min} to {max} positional arguments")
        };
        let given = if npos == 1 {
            "1 was given".to_string()
        } else {
            format!("{npos} were given")
        };
        let at_least = if has_star { "at least " } else { "" };
        return vec![sig.error(
            format!("{fname} takes {takes} but {at_least}{given}"),
            call,
            &format!("{} given", plural(npos, "positional argument", "positional arguments")),
        )];
    }

    // Keywords: unknown names and values given twice.
    for (k, _) in &keywords {
        if let Some(i) = sig.params.iter().position(|q| q.name.name == k.name) {
            if i < npos {
                return vec![sig
                    .error(
                        format!("{fname} got multiple values for argument '{}'", k.name),
                        call,
                        "in this call",
                    )
                    .label(k.span, "given again here")];
            }
        } else if !sig.kwonly.iter().any(|q| q.name.name == k.name) && sig.kwarg.is_none() {
            let what = if sig.is_struct { "field" } else { "keyword argument" };
            let mut d = sig.error(
                format!("{fname} got an unexpected {what} '{}'", k.name),
                call,
                "in this call",
            );
            d.labels.insert(
                0,
                crate::diagnostic::Label {
                    span: k.span,
                    message: Some("unknown name".into()),
                },
            );
            d.labels.retain(|l| l.span != call);
            let names: Vec<&str> = sig
                .params
                .iter()
                .chain(&sig.kwonly)
                .map(|q| q.name.name.as_str())
                .collect();
            if let Some(c) = sig.consts.iter().find(|c| c.name.name == k.name) {
                d.help = Some(const_hint(c));
            } else if let Some(s) = super::suggest::closest(&k.name, names) {
                d.help = Some(format!("did you mean '{s}='? {}", sig.hint()));
            }
            return vec![d];
        }
    }

    // Missing required arguments (unknowable with `*xs` / `**kw`).
    if !has_star && !has_dstar {
        let given = |name: &str| keywords.iter().any(|(k, _)| k.name == name);
        let missing: Vec<&str> = sig
            .params
            .iter()
            .enumerate()
            .filter(|(i, q)| q.required && *i >= npos && !given(&q.name.name))
            .map(|(_, q)| q.name.name.as_str())
            .collect();
        if !missing.is_empty() {
            let noun = plural(
                missing.len(),
                "required positional argument",
                "required positional arguments",
            );
            return vec![sig.error(
                format!("{fname} missing {noun}: {}", name_list(&missing)),
                call,
                "in this call",
            )];
        }
        let missing_kw: Vec<&str> = sig
            .kwonly
            .iter()
            .filter(|q| q.required && !given(&q.name.name))
            .map(|q| q.name.name.as_str())
            .collect();
        if !missing_kw.is_empty() {
            let noun = plural(
                missing_kw.len(),
                "required keyword-only argument",
                "required keyword-only arguments",
            );
            return vec![sig.error(
                format!("{fname} missing {noun}: {}", name_list(&missing_kw)),
                call,
                "in this call",
            )];
        }
    }

    // Literals of the wrong type.
    let mut out = Vec::new();
    let first_star = args
        .iter()
        .position(|a| matches!(a, Arg::Star(_)))
        .unwrap_or(usize::MAX);
    let mut pos_index = 0usize;
    for (ai, a) in args.iter().enumerate() {
        match a {
            Arg::Positional(x) => {
                if ai < first_star {
                    if let Some(q) = sig.params.get(pos_index) {
                        out.extend(literal_mismatch(&fname, q, x));
                    }
                }
                pos_index += 1;
            }
            Arg::Keyword(k, x) => {
                if let Some(q) = sig.params.iter().chain(&sig.kwonly).find(|q| q.name.name == k.name) {
                    out.extend(literal_mismatch(&fname, q, x));
                }
            }
            _ => {}
        }
    }
    out
}

/// The type of a literal expression, if it is one.
pub(crate) fn literal_type(e: &Expr) -> Option<&'static str> {
    Some(match &e.kind {
        ExprKind::Int(_) => "int",
        ExprKind::Float(_) => "float",
        ExprKind::Str(_) | ExprKind::FString(_) => "str",
        ExprKind::Bytes(_) => "bytes",
        ExprKind::Bool(_) => "bool",
        ExprKind::None => "none",
        ExprKind::List(_) | ExprKind::ListComp { .. } => "list",
        ExprKind::Dict(_) | ExprKind::DictComp { .. } => "dict",
        ExprKind::Set(_) | ExprKind::SetComp { .. } => "set",
        ExprKind::Tuple(_) => "tuple",
        ExprKind::UnaryOp {
            op: UnaryOp::Neg | UnaryOp::Pos,
            operand,
        } => match operand.kind {
            ExprKind::Int(_) => "int",
            ExprKind::Float(_) => "float",
            _ => return None,
        },
        _ => return None,
    })
}

/// The plain type an annotation names, if it is one the checker can judge.
fn annotated_type(e: &Expr) -> Option<&'static str> {
    let name = match &e.kind {
        ExprKind::Name(n) => n.as_str(),
        ExprKind::Index { value, .. } => match &value.kind {
            ExprKind::Name(n) if matches!(n.as_str(), "list" | "dict" | "tuple") => n.as_str(),
            _ => return None,
        },
        _ => return None,
    };
    ["int", "float", "str", "bool", "list", "dict", "tuple"]
        .into_iter()
        .find(|t| *t == name)
}

/// Whether a value of type `found` may be passed where `expected` is declared
/// (an int where a float is wanted is fine, as is a bool where a number is).
fn compatible(expected: &str, found: &str) -> bool {
    expected == found
        || (expected == "float" && matches!(found, "int" | "bool"))
        || (expected == "int" && found == "bool")
}

fn literal_mismatch(fname: &str, q: &P<'_>, arg: &Expr) -> Option<Diagnostic> {
    let ann = q.annotation?;
    let expected = annotated_type(ann)?;
    let found = literal_type(arg)?;
    if compatible(expected, found) {
        return None;
    }
    Some(
        Diagnostic::new(
            ErrorKind::TypeError,
            format!("{fname} argument '{}' must be {expected}, not {found}", q.name.name),
        )
        .label(arg.span, format!("this is a {found}"))
        .label(ann.span, format!("'{}' is declared as {expected} here", q.name.name))
        .help(format!(
            "pass a value of type {expected}, or change the annotation of '{}'",
            q.name.name
        )),
    )
}

fn default_mismatch(owner: &str, q: &P<'_>, default: &Expr) -> Option<Diagnostic> {
    let ann = q.annotation?;
    let expected = annotated_type(ann)?;
    let found = literal_type(default)?;
    // `x: int = none` is the usual way to say "optional".
    if found == "none" || compatible(expected, found) {
        return None;
    }
    Some(
        Diagnostic::new(
            ErrorKind::TypeError,
            format!(
                "default of '{}' in {owner} must be {expected}, not {found}",
                q.name.name
            ),
        )
        .label(default.span, format!("this is a {found}"))
        .label(ann.span, format!("'{}' is declared as {expected} here", q.name.name))
        .help(format!(
            "give '{}' a default of type {expected}, or change its annotation",
            q.name.name
        )),
    )
}

/// Literal defaults of annotated parameters that contradict their annotation.
pub(crate) fn check_param_defaults(params: &Params, fname: &str) -> Vec<Diagnostic> {
    let owner = format!("{fname}()");
    params
        .params
        .iter()
        .chain(&params.kwonly)
        .filter_map(|param| default_mismatch(&owner, &p(param), param.default.as_ref()?))
        .collect()
}

/// The same for struct fields.
pub(crate) fn check_field_defaults(sd: &StructDef) -> Vec<Diagnostic> {
    let owner = format!("struct {}", sd.name.name);
    sd.fields
        .iter()
        .filter_map(|f| {
            let q = P {
                name: &f.name,
                required: f.default.is_none(),
                annotation: f.annotation.as_ref(),
            };
            default_mismatch(&owner, &q, f.default.as_ref()?)
        })
        .collect()
}
