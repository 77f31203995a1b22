use resilient::{race_retry, Rejected};

struct Point {
    x: i64,
    y: i64,
}

// Each binding of a pattern argument is copied for each attempt.
#[race_retry(retries = 1, after = "100ms", total = "1s")]
async fn locate((id, region): (u64, &str), &Point { x, y }: &Point) -> Result<String, Rejected> {
    Ok(format!("{id}@{region} ({x}, {y})"))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let here = Point { x: 1, y: -2 };
    assert_eq!(locate((7, "eu"), &here).await.unwrap(), "7@eu (1, -2)");
}
