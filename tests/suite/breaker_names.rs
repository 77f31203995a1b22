//! Default breaker names: the annotated fn's path, so that methods of different types (and trait
//! impls) get breakers of their own.

use resiliency::breaker::{self, State};

use crate::support;
use support::BoxError;

fn outcome(fail: bool) -> Result<(), BoxError> {
    if fail {
        Err("down".into())
    } else {
        Ok(())
    }
}

struct Alpha;
struct Beta;

impl Alpha {
    #[resiliency::breaker(error_threshold = 1)]
    async fn get(&self, fail: bool) -> Result<(), BoxError> {
        outcome(fail)
    }
}

impl Beta {
    #[resiliency::breaker(error_threshold = 1)]
    async fn get(&self, fail: bool) -> Result<(), BoxError> {
        outcome(fail)
    }
}

trait Store {
    async fn load(&self, fail: bool) -> Result<(), BoxError>;
}

impl Store for Alpha {
    #[resiliency::breaker(error_threshold = 1)]
    async fn load(&self, fail: bool) -> Result<(), BoxError> {
        outcome(fail)
    }
}

#[resiliency::breaker(error_threshold = 1)]
async fn free(fail: bool) -> Result<(), BoxError> {
    outcome(fail)
}

#[resiliency::breaker(error_threshold = 1)]
#[tracing::instrument]
async fn instrumented(fail: bool) -> Result<(), BoxError> {
    outcome(fail)
}

#[tokio::test(start_paused = true)]
async fn same_named_methods_of_two_types_get_two_breakers() {
    assert!(Alpha.get(true).await.is_err());
    assert!(
        Beta.get(false).await.is_ok(),
        "Beta::get has its own breaker"
    );
    let alpha =
        breaker::get("suite::breaker_names::Alpha::get").expect("named after the method's path");
    let beta =
        breaker::get("suite::breaker_names::Beta::get").expect("named after the method's path");
    assert_eq!(alpha.state(), State::Open);
    assert_eq!(beta.state(), State::Closed);
}

#[tokio::test(start_paused = true)]
async fn free_fns_trait_impls_and_instrumented_fns_are_named_after_their_path() {
    free(false).await.unwrap();
    Alpha.load(false).await.unwrap();
    instrumented(false).await.unwrap();
    for name in [
        "suite::breaker_names::free",
        "<suite::breaker_names::Alpha as suite::breaker_names::Store>::load",
        "suite::breaker_names::instrumented",
    ] {
        assert!(
            breaker::get(name).is_some(),
            "{name} in {:?}",
            breaker::names()
        );
    }
}
