// Bodies of one expression (`{ Ok(x) }`) and inner attributes (`#![allow(..)]`) under each
// attribute compile without a warning in the user's code.
#![deny(warnings)]

use resilient::{breaker, race_retry, too_busy, Rejected};

#[breaker]
async fn guarded(x: u32) -> Result<u32, Rejected> { Ok(x) }

#[too_busy]
async fn shed(x: u32) -> Result<u32, Rejected> { Ok(x) }

#[race_retry(total = "1s")]
async fn raced(x: &str) -> Result<&str, Rejected> { Ok(x) }

#[breaker]
#[too_busy]
#[race_retry(total = "1s")]
async fn all(x: u32) -> Result<u32, Rejected> {
    #![allow(unused_variables)]
    let unused = 1;
    Ok(x)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(guarded(1).await.unwrap(), 1);
    assert_eq!(shed(2).await.unwrap(), 2);
    assert_eq!(raced("3").await.unwrap(), "3");
    assert_eq!(all(4).await.unwrap(), 4);
}
