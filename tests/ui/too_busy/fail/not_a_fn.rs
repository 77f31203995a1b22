use resiliency::too_busy;

#[too_busy]
struct Handler {
    id: u32,
}

fn main() {}
