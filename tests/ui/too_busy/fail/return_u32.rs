use resilient::too_busy;

#[too_busy]
async fn handler() -> u32 {
    1
}

fn main() {}
