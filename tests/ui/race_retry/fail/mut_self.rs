// `&mut self` cannot be lent to attempts running at once.
use resiliency::{race_retry, Rejected};

struct Cache {
    hits: u32,
}

impl Cache {
    #[race_retry(total = "450ms")]
    async fn lookup(&mut self) -> Result<u32, Rejected> {
        self.hits += 1;
        Ok(self.hits)
    }
}

fn main() {
    let mut cache = Cache { hits: 0 };
    let _ = cache.lookup();
}
