// Methods of a generic impl and of a trait impl for a generic type, under all three attributes:
// one policy per method (shared by every `T`), named by the method's path with `<_>`.
#![deny(warnings)]

use std::marker::PhantomData;

use resilient::{breaker, race_retry, too_busy, Rejected};

struct Client<T> {
    base: String,
    marker: PhantomData<T>,
}

impl<T: Default + std::fmt::Debug + Send + Sync> Client<T> {
    #[breaker]
    async fn get(&self, id: u32) -> Result<String, Rejected> {
        Ok(format!("{}{id}", self.base))
    }

    #[too_busy]
    async fn make(&self) -> Result<T, Rejected> {
        Ok(T::default())
    }

    #[race_retry(total = "1s", after = "5ms")]
    async fn raced<U: Clone + std::fmt::Debug>(&self, u: U) -> Result<String, Rejected> {
        Ok(format!("{}{u:?}{:?}", self.base, T::default()))
    }
}

trait Store {
    async fn load(&self, key: &str) -> Result<usize, Rejected>;
}

impl<T: Sync> Store for Client<T> {
    #[race_retry(total = "1s", after = "5ms")]
    #[breaker]
    async fn load(&self, key: &str) -> Result<usize, Rejected> {
        Ok(key.len() + self.base.len())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a: Client<u8> = Client { base: "a".into(), marker: PhantomData };
    let b: Client<String> = Client { base: "b".into(), marker: PhantomData };
    assert_eq!(a.get(1).await.unwrap(), "a1");
    assert_eq!(b.get(2).await.unwrap(), "b2");
    assert_eq!(a.make().await.unwrap(), 0);
    assert_eq!(b.make().await.unwrap(), "");
    assert_eq!(a.raced(3u64).await.unwrap(), "a30");
    assert_eq!(b.load("k").await.unwrap(), 2);
    // The crate's name is trybuild's here; the paths after it are the methods'.
    let names = resilient::breaker::names();
    assert!(names.iter().any(|n| n.ends_with("::Client<_>::get")), "{names:?}");
    assert!(names.iter().any(|n| n.contains("::Client<_> as ") && n.ends_with("::Store>::load")), "{names:?}");
}
