use resiliency::too_busy;

#[too_busy]
async fn handler() {}

fn main() {}
