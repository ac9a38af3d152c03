use apsi_core::compile::*;
use apsi_core::compile::emit::{GlobalEnv, GlobalRef};
use apsi_core::vm::globals::GlobalSlot;
use std::sync::Arc;
struct E;
impl GlobalEnv for E {
    fn resolve(&mut self, name: &str) -> GlobalRef {
        if name == "range" { return GlobalRef::Const(apsi_core::builtins::prelude().get("range").unwrap().clone()); }
        GlobalRef::Slot(Arc::new(GlobalSlot::new(name, true, None)))
    }
    fn slot_for_write(&mut self, name: &str) -> Arc<GlobalSlot> { Arc::new(GlobalSlot::new(name, true, None)) }
}
#[test]
fn dump() {
    let src = std::env::var("SRC").unwrap_or_default();
    let (m, _) = apsi_core::syntax::parse(Default::default(), &src);
    let t = analyze(&m, &[]);
    let p = compile_module(&m, &t, &mut E, false).ok().unwrap();
    fn show(c: &Code) { println!("{c:?}"); for p in c.protos.iter() { show(&p.code) } }
    show(&p.code);
}
