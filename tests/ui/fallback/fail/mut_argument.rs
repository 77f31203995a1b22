use resiliency::{breaker, Rejected};

struct Cache;

impl Cache {
    fn stale(&mut self, _why: Rejected) -> Result<u32, Rejected> {
        Ok(0)
    }

    #[breaker(fallback = Self::stale)]
    async fn fetch(&mut self) -> Result<u32, Rejected> {
        Ok(1)
    }
}

fn main() {}
