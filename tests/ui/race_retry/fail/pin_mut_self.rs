// `self: Pin<&mut Self>` cannot be lent to several attempts at once.
use std::pin::Pin;

use resiliency::{race_retry, Rejected};

struct Stream {
    read: u32,
}

impl Stream {
    #[race_retry(total = "450ms")]
    async fn next(self: Pin<&mut Self>) -> Result<u32, Rejected> {
        Ok(self.read)
    }
}

fn main() {}
