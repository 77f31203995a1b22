use resiliency::too_busy;

#[too_busy]
async fn handler() -> (u8, u8) {
    (1, 2)
}

fn main() {}
