//! Functions defined in Apsi: compiled code objects and closures.
//! (Owned by the compiler/VM work; this is the minimal shape the value model names.)

pub struct Closure {
    pub name: String,
}
