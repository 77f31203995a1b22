//! 7. Settings by name at run time.
use resiliency::settings::{self, Policy};

/// Every setting of an attribute is the default of a named site, overridden at run time from
/// code (here), a configuration file or the environment (`RESILIENCY_BREAKER__PROFILES__...`).
pub(super) async fn run() {
    println!("\n7. Settings by name at run time (resiliency::settings)");
    let profiles = resiliency::breaker::get("profiles").expect("called above");
    println!(
        "  profiles is {}, for {:?} after its last error",
        profiles.state(),
        profiles.error_timeout()
    );
    settings::set(Policy::Breaker, "profiles", "error_timeout", "5s").expect("a valid value");
    println!(
        "  set error_timeout = \"5s\": still {}, now for {:?}",
        profiles.state(),
        profiles.error_timeout()
    );
    let refused = settings::set(Policy::Breaker, "profiles", "error_threshold", 0).unwrap_err();
    println!("  set error_threshold = 0: refused, {refused}");
    for e in settings::effective(Policy::Breaker, "profiles").unwrap_or_default() {
        if let Some(value) = e.value {
            println!("  {} = {value} (from {})", e.setting, e.source);
        }
    }
    settings::unset(Policy::Breaker, "profiles", "error_timeout").expect("back to the attribute");
}
