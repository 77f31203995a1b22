// `self` by value of a type that is not `Clone`: each attempt would need its own copy.
use resiliency::{race_retry, Rejected};

struct Client {
    base: u32,
}

impl Client {
    #[race_retry(total = "450ms")]
    async fn lookup(self) -> Result<u32, Rejected> {
        Ok(self.base)
    }
}

fn main() {
    let _ = Client { base: 1 }.lookup();
}
