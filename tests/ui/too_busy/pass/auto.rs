//! `max_in_flight = "auto"` with its bounds, as literals and as expressions, on a free fn, a
//! method and a blocking fn.

use resiliency::{too_busy, Rejected};

const MAX: u32 = 64;

#[too_busy(max_in_flight = "auto")]
async fn plain() -> Result<u32, Rejected> {
    Ok(1)
}

#[too_busy(max_in_flight = "auto", auto_min = 1, auto_max = MAX, auto_initial = 8, max_lag = "50ms")]
async fn bounded(n: u32) -> Result<u32, Rejected> {
    Ok(n)
}

struct Pool;

impl Pool {
    #[too_busy(max_in_flight = "auto", max_latency = "1s")]
    async fn query<'a>(&self, q: &'a str) -> Result<&'a str, Rejected> {
        Ok(q)
    }
}

#[too_busy(max_in_flight = "auto", auto_max = 16)]
fn render(page: String) -> Result<usize, Rejected> {
    Ok(page.len())
}

fn main() {
    let _ = (plain(), bounded(1), Pool.query("q"), render(String::new()));
}
