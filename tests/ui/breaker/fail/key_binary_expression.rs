// A key written as an expression with operators: the error covers all of it.
use resiliency::{breaker, Rejected};

struct Shard(u32);

impl std::ops::Rem<u32> for &Shard {
    type Output = Shard;
    fn rem(self, n: u32) -> Shard {
        Shard(self.0 % n)
    }
}

#[breaker(key = shard % 8)]
async fn get(shard: &Shard) -> Result<u32, Rejected> {
    Ok(shard.0)
}

fn main() {
    let _ = get(&Shard(3));
}
