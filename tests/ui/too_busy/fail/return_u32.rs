use resiliency::too_busy;

#[too_busy]
async fn handler() -> u32 {
    1
}

fn main() {}
