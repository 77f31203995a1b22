use resilient::too_busy;

#[too_busy]
async fn handler() {}

fn main() {}
