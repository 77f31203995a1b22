// A blocking fn refuses through `Result<T, E>` only.
use resiliency::too_busy;

pub struct Page(pub String);

#[too_busy(max_in_flight = 4)]
fn render() -> Page {
    Page("ok".into())
}

fn main() {
    let _ = render();
}
