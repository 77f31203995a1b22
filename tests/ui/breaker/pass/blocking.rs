// Blocking fns under `#[breaker]`: a method on `&self` returning a borrow, generics, `impl
// Trait` and `mut` arguments, early `return` and `?`, a key, `count_if`, an expression setting,
// stacked with `#[too_busy]`.
use resiliency::{breaker, too_busy, Rejected};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const THRESHOLD: u32 = 2;

struct Pool {
    name: String,
}

impl Pool {
    #[breaker(error_threshold = THRESHOLD)]
    fn name(&self, fail: bool) -> Result<&str, BoxError> {
        if fail {
            return Err("down".into());
        }
        Ok(&self.name)
    }
}

#[breaker(key = host, error_threshold = 2, idle_timeout = "10m")]
fn get<T: From<u8>>(host: &str, mut tries: Vec<u8>, label: impl AsRef<str>) -> Result<T, BoxError> {
    tries.push(label.as_ref().len() as u8);
    let first: u8 = host.len().try_into()?;
    Ok(T::from(first + tries[0]))
}

fn is_transient(error: &Rejected) -> bool {
    error.is_circuit_open()
}

#[breaker(count_if = is_transient, error_threshold = 1)]
#[too_busy(max_in_flight = 2)]
fn both() -> Result<u32, Rejected> {
    Ok(3)
}

fn main() {
    let pool = Pool { name: "p".into() };
    assert_eq!(pool.name(false).unwrap(), "p");
    assert!(pool.name(true).is_err());
    assert_eq!(get::<u32>("ab", vec![1], "xyz").unwrap(), 3);
    assert_eq!(both().unwrap(), 3);
}
