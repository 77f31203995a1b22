// A fn without a return type has no `Err` to return when a call is refused.
use resiliency::rate_limit;

#[rate_limit("100/s")]
async fn refresh_prices() {}

fn main() {
    let _ = refresh_prices();
}
