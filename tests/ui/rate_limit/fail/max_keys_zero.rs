use resiliency::{rate_limit, Rejected};

#[rate_limit("100/s", key = client, max_keys = 0)]
async fn quote(client: &str, symbol: &str) -> Result<String, Rejected> {
    let _ = client;
    Ok(symbol.to_owned())
}

fn main() {}
