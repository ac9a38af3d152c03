use apsi_core::vm::value::*;
#[test]
#[ignore]
fn hash_speed() {
    let t = std::time::Instant::now();
    let mut m: indexmap::IndexMap<HashKey, Value, FxBuild> = Default::default();
    for i in 0..1_000_000i64 {
        let k = (i * 2654435761) % 4294967296;
        m.insert(HashKey::new(Value::Int(k)).ok().unwrap(), Value::Int(k));
    }
    println!("indexmap insert {:?} per op", t.elapsed() / 1_000_000);
    let t = std::time::Instant::now();
    let mut m: std::collections::HashMap<i64, i64> = Default::default();
    for i in 0..1_000_000i64 {
        let k = (i * 2654435761) % 4294967296;
        m.insert(k, k);
    }
    println!("std hashmap insert {:?} per op", t.elapsed() / 1_000_000);
    let t = std::time::Instant::now();
    let mut m: std::collections::HashMap<i64, i64, FxBuild> = Default::default();
    for i in 0..1_000_000i64 {
        let k = (i * 2654435761) % 4294967296;
        m.insert(k, k);
    }
    println!("fx hashmap insert {:?} per op", t.elapsed() / 1_000_000);
}
