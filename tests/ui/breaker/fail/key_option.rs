// An `Option` cannot key a breaker; the error covers the whole key expression.
use resiliency::{breaker, Rejected};

struct Url(&'static str);

impl Url {
    fn host_str(&self) -> Option<&str> {
        Some(self.0)
    }
}

#[breaker(key = url.host_str())]
async fn get(url: &Url) -> Result<u32, Rejected> {
    Ok(1)
}

fn main() {
    let _ = get(&Url("a"));
}
