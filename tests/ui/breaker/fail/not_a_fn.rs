use resiliency::breaker;

#[breaker(error_threshold = 3)]
struct Charge {
    cents: u64,
}

fn main() {
    let _ = Charge { cents: 1 }.cents;
}
