//! Checks of type annotations: every dtype named in a `Tensor[…]`
//! annotation must be one of Apsi's (LANGUAGE.md §7); dimensions are
//! capitalised names (`N`) or integers.

use super::suggest::closest;
use super::walk::{walk_body, Visitor};
use crate::diagnostic::Diagnostic;
use crate::error::ErrorKind;
use crate::syntax::ast::*;

/// Every dtype name, canonical names and aliases.
pub const DTYPES: &[&str] = &[
    "f64", "f32", "f16", "bf16", "fp8_e4m3", "fp8", "fp8_e5m2", "bf8", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1", "fp4",
    "int8", "int4", "uint8", "i64", "i32", "bool",
];

struct Annotations {
    diags: Vec<Diagnostic>,
}

/// Checks every annotation in a module (functions never called included).
pub(crate) fn check_module(m: &Module) -> Vec<Diagnostic> {
    let mut v = Annotations { diags: Vec::new() };
    walk_body(&mut v, &m.body);
    v.diags
}

impl<'a> Visitor<'a> for Annotations {
    fn annotation(&mut self, e: &'a Expr) {
        self.check(e);
    }
}

impl Annotations {
    fn check(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Index { value, index } => {
                if matches!(&value.kind, ExprKind::Name(n) if n == "Tensor") {
                    self.tensor(index);
                } else {
                    self.check(index);
                }
            }
            ExprKind::Tuple(xs) | ExprKind::List(xs) => {
                for x in xs {
                    self.check(x);
                }
            }
            ExprKind::BinOp { left, right, .. } => {
                self.check(left);
                self.check(right);
            }
            _ => {}
        }
    }

    fn tensor(&mut self, index: &Expr) {
        let parts: Vec<&Expr> = match &index.kind {
            ExprKind::Tuple(xs) => xs.iter().collect(),
            _ => vec![index],
        };
        let mut dtype_seen: Option<&Expr> = None;
        for part in parts {
            match &part.kind {
                ExprKind::Int(_) => {}
                ExprKind::Name(n) if DTYPES.contains(&n.as_str()) => {
                    if let Some(first) = dtype_seen {
                        self.diags.push(
                            Diagnostic::new(ErrorKind::TypeError, "a Tensor annotation names at most one dtype")
                                .label(part.span, "second dtype")
                                .label(first.span, "first dtype")
                                .help("write the shape's dimensions, then one dtype: Tensor[N, 3, f32]"),
                        );
                    }
                    dtype_seen = Some(part);
                }
                ExprKind::Name(n) if n.chars().next().is_some_and(|c| c.is_uppercase()) => {}
                ExprKind::Name(n) => {
                    let hint = match closest(n, DTYPES.iter().copied()) {
                        Some(s) => format!("did you mean '{s}'? The dtypes are: {}", DTYPES.join(", ")),
                        None => format!(
                            "the dtypes are: {}; a dimension is a capitalised name (N) or a number",
                            DTYPES.join(", ")
                        ),
                    };
                    self.diags.push(
                        Diagnostic::new(
                            ErrorKind::TypeError,
                            format!("unknown dtype '{n}' in a Tensor annotation"),
                        )
                        .label(part.span, "not a dtype")
                        .help(hint),
                    );
                }
                _ => {
                    self.diags.push(
                        Diagnostic::new(ErrorKind::TypeError, "a Tensor annotation takes dimensions and a dtype")
                            .label(part.span, "neither a dimension nor a dtype")
                            .help("write Tensor, Tensor[f32], Tensor[N, M] or Tensor[N, 3, f32]: dimensions are capitalised names or numbers"),
                    );
                }
            }
        }
    }
}
