use resiliency::{rate_limit, Rejected};

// `max_keys` bounds the keys of a keyed limit; this one has no `key`.
#[rate_limit("100/s", max_keys = 1000)]
async fn quote(symbol: &str) -> Result<String, Rejected> {
    Ok(symbol.to_owned())
}

fn main() {}
