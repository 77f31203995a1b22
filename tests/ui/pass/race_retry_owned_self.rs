// An owned `self` (`self`, `mut self`, `self: Arc<Self>`, `self: Box<Self>`) is cloned for each
// attempt, as owned arguments are; `self: &Self` is shared like `&self`. `self::` paths and the
// `self` of an `impl` nested in the body are left alone; `{self}` in a format string is the copy.
// No warnings.
#![deny(warnings)]

use std::sync::Arc;
use std::time::Duration;

use resilient::{race_retry, Rejected};

#[derive(Clone, Debug)]
struct Client {
    name: String,
}

fn suffix() -> &'static str {
    "!"
}

impl Client {
    #[race_retry(retries = 2, after = "10ms", total = "1s")]
    async fn by_value(self, id: u64) -> Result<String, Rejected> {
        Ok(format!("{}{id}", self.name))
    }

    #[race_retry(retries = 2, after = "10ms", total = "1s")]
    async fn by_mut_value(mut self, id: u64) -> Result<String, Rejected> {
        use self::suffix as end;
        struct Tag;
        impl Tag {
            fn text(&self) -> &'static str {
                "tag"
            }
        }
        self.name.push_str(end());
        Ok(format!("{}{id}-{}", self.name, Tag.text()))
    }

    // A format string that captures `self`, next to an escaped `{{self}}` that is text.
    #[race_retry(retries = 2, after = "10ms", total = "1s")]
    async fn shown(self) -> Result<String, Rejected> {
        Ok(format!("{self:?} {{self}}"))
    }

    #[race_retry(retries = 2, after = "10ms", total = "1s")]
    async fn by_arc(self: Arc<Self>) -> Result<usize, Rejected> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        Ok(Arc::strong_count(&self))
    }

    #[race_retry(retries = 2, after = "10ms", total = "1s")]
    async fn by_box(self: Box<Self>) -> Result<String, Rejected> {
        Ok(self.name)
    }

    #[race_retry(retries = 2, after = "10ms", total = "1s")]
    async fn by_typed_ref(self: &Self) -> Result<&str, Rejected> {
        Ok(&self.name)
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let client = Client { name: "c".into() };
    assert_eq!(client.clone().by_value(1).await.unwrap(), "c1");
    assert_eq!(client.clone().by_mut_value(2).await.unwrap(), "c!2-tag");
    assert_eq!(client.name, "c");
    assert_eq!(client.clone().shown().await.unwrap(), "Client { name: \"c\" } {self}");
    let shared = Arc::new(client.clone());
    // The caller's `Arc`, the one moved into the call, and the attempt's copy.
    assert_eq!(shared.clone().by_arc().await.unwrap(), 3);
    assert_eq!(Arc::strong_count(&shared), 1);
    assert_eq!(Box::new(client.clone()).by_box().await.unwrap(), "c");
    assert_eq!(client.by_typed_ref().await.unwrap(), "c");
}
