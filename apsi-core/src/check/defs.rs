//! The definitions of a file, by address: the scope table
//! ([`super::scopes`]) says which `def` or `struct` statement alone binds a
//! name ([`Binder::Func`](super::scopes::Binder) and `Struct` hold its
//! node's address); this index turns that address back into the node, so
//! the call checks can read its parameters.

use crate::syntax::ast::*;
use rustc_hash::FxHashMap;

/// A definition whose call signature is known.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Def<'a> {
    Func(&'a FuncDef),
    Struct(&'a StructDef),
}

/// Every `def` and `struct` statement of one tree (nested ones included),
/// by the address of its node.
pub(crate) struct DefIndex<'a>(FxHashMap<usize, Def<'a>>);

impl<'a> DefIndex<'a> {
    pub fn of(m: &'a Module) -> DefIndex<'a> {
        let mut index = DefIndex(FxHashMap::default());
        super::walk::walk_body(&mut index, &m.body);
        index
    }

    /// The definition a scope's binder names, if it is one.
    pub fn get(&self, binder: super::scopes::Binder) -> Option<Def<'a>> {
        use super::scopes::Binder;
        match binder {
            Binder::Func(addr) | Binder::Struct(addr) => self.0.get(&addr).copied(),
            Binder::Plain | Binder::Use(_) => None,
        }
    }
}

impl<'a> super::walk::Visitor<'a> for DefIndex<'a> {
    fn stmt(&mut self, s: &'a Stmt) {
        match &s.kind {
            StmtKind::FuncDef(f) => {
                self.0.insert(&**f as *const FuncDef as usize, Def::Func(f));
            }
            StmtKind::StructDef(sd) => {
                self.0.insert(&**sd as *const StructDef as usize, Def::Struct(sd));
            }
            _ => {}
        }
        super::walk::walk_stmt(self, s);
    }

    // Definitions are statements; expressions hold none.
    fn expr(&mut self, _e: &'a Expr) {}
}
