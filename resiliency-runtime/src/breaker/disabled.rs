//! `RESILIENCY_DISABLED`: the kill switch that makes every breaker pass calls through, read once.

use std::sync::atomic::{AtomicU8, Ordering};

static DISABLED: AtomicU8 = AtomicU8::new(0);

/// True when `RESILIENCY_DISABLED` is set to `1`, `true`, `yes` or `on` (in any case, surrounding
/// spaces ignored): every breaker then passes calls through untouched (no admission, no timeout,
/// nothing counted), stays [`State::Closed`](super::State::Closed) and ignores forcing. `0`, `false`, `no`, `off` and
/// the empty string leave breakers on; any other value leaves them on too and is reported once as
/// a `tracing` warning. Read once, on first use; when it disables the breakers, that is said once
/// at level warn (target `resiliency::breaker`).
pub fn disabled() -> bool {
    match DISABLED.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => read_disabled(),
    }
}

fn read_disabled() -> bool {
    let value = std::env::var("RESILIENCY_DISABLED").ok();
    let off = match value.as_deref().map(kill_switch) {
        None => false,
        Some(Some(off)) => off,
        Some(None) => {
            crate::later::emit(move || {
                tracing::warn!(
                    target: "resiliency::breaker",
                    value = value.as_deref(),
                    "RESILIENCY_DISABLED is not one of 1, true, yes, on, 0, false, no, off; breakers stay on"
                )
            });
            false
        }
    };
    // Once: the first reader stores it; a thread racing it reads the same variable.
    if DISABLED
        .compare_exchange(
            0,
            if off { 2 } else { 1 },
            Ordering::Relaxed,
            Ordering::Relaxed,
        )
        .is_ok()
        && off
    {
        crate::later::emit(|| {
            tracing::warn!(
                target: "resiliency::breaker",
                "RESILIENCY_DISABLED is set: every breaker passes calls through (no admission, \
                 no timeout, nothing counted) and ignores forcing"
            )
        });
    }
    off
}

/// What a value of `RESILIENCY_DISABLED` says: `Some(true)` to disable, `Some(false)` to leave on,
/// `None` when it is not understood.
fn kill_switch(value: &str) -> Option<bool> {
    let value = value.trim();
    let is = |word: &str| value.eq_ignore_ascii_case(word);
    if ["1", "true", "yes", "on"].into_iter().any(is) {
        Some(true)
    } else if value.is_empty() || ["0", "false", "no", "off"].into_iter().any(is) {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::kill_switch;

    #[test]
    fn the_kill_switch_takes_the_spellings_people_write() {
        for on in [
            "1", "true", "TRUE", "True", "yes", "YES", "on", "On", " 1 ", "true\n",
        ] {
            assert_eq!(kill_switch(on), Some(true), "{on:?}");
        }
        for off in ["", "0", "false", "FALSE", "no", "No", "off", "OFF", "  "] {
            assert_eq!(kill_switch(off), Some(false), "{off:?}");
        }
        for unknown in ["2", "disabled", "y", "enable", "tru"] {
            assert_eq!(kill_switch(unknown), None, "{unknown:?}");
        }
    }

    /// Any value, and the words in any case with any whitespace around: understood exactly when
    /// its trimmed text is one of the words, in any case (the empty string leaves breakers on).
    #[test]
    fn any_value_of_the_kill_switch_is_understood_or_reported() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        let word = prop::sample::select(vec![
            "1", "true", "yes", "on", "0", "false", "no", "off", "", "2", "tru", "oui",
        ]);
        let mixed = (word, any::<u64>(), "[ \t\n\r]{0,3}", "[ \t\n\r]{0,3}").prop_map(
            |(word, upper, before, after)| {
                let word: String = word
                    .chars()
                    .enumerate()
                    .map(|(i, c)| {
                        if upper >> (i % 64) & 1 == 1 {
                            c.to_ascii_uppercase()
                        } else {
                            c
                        }
                    })
                    .collect();
                format!("{before}{word}{after}")
            },
        );
        let value = prop_oneof![mixed, "\\PC{0,16}", any::<String>()];
        let mut runner = TestRunner::new(Config {
            cases: 512,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&value, |value| {
                let expected = match value.trim().to_ascii_lowercase().as_str() {
                    "1" | "true" | "yes" | "on" => Some(true),
                    "" | "0" | "false" | "no" | "off" => Some(false),
                    _ => None,
                };
                prop_assert_eq!(kill_switch(&value), expected, "{:?}", value);
                Ok(())
            })
            .unwrap();
    }
}
