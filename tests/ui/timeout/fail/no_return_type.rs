// A fn without a return type has no `Err` to return when its time runs out.
use resiliency::timeout;

#[timeout("2s")]
async fn refresh_prices() {}

fn main() {
    let _ = refresh_prices();
}
