use apsi_core::module::{ModuleBuilder, ModuleDescriptor};
use apsi_core::vm::value::{Value, Caller, Kwargs, VResult};
pub fn module() -> ModuleDescriptor {
    ModuleBuilder::new("native", env!("CARGO_PKG_VERSION"), "^2.0").function("native", native).build()
}
fn native(_c: &mut dyn Caller, args: &[Value], _kw: Kwargs) -> VResult<Value> {
    if let [Value::Func(f)] = args { eprintln!("{:?}", f.proto.code); for p in f.proto.code.protos.iter() { eprintln!("{:?} {:?}", p.code, p.captures); } }
    Ok(args[0].clone())
}
