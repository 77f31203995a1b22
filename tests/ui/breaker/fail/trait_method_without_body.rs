use resiliency::{breaker, Rejected};

trait Store {
    #[breaker(error_threshold = 3)]
    async fn load(&self, id: u64) -> Result<String, Rejected>;
}

fn main() {}
