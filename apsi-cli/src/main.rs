fn main() {
    println!("apsi {}", apsi_core::VERSION);
}
