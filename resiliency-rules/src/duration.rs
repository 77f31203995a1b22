//! Durations as the attributes and the run-time settings write them: "450ms", "1.5s", "1m30s".

/// The units of a duration, largest first, with their length in ns.
pub(crate) const UNITS: &[(&str, u64)] = &[
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("ns", 1),
];

/// Parses a duration: one or more parts, each a number and a unit (`h`, `m`, `s`, `ms`, `us` or
/// `µs`, `ns`), such as "450ms", "1.5s", "2m", "250us" or "1m30s". Spaces may separate a number
/// from its unit and a part from the next ("2m 30s"). In a compound duration the units go from
/// largest to smallest, each once, and only the last part may have a fraction ("1m30.5s").
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let mut rest = text;
    let mut nanos: u128 = 0;
    // The previous part's unit (its length in ns), and whether its number had a fraction.
    let mut previous: Option<(u64, bool)> = None;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        if number.is_empty() {
            return Err(match previous {
                None => format!("`{text}` does not start with a number"),
                Some(_) => format!("`{text}`: `{rest}` is not a number and a unit"),
            });
        }
        let after = after.trim_start();
        let unit_len = after
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        if unit.is_empty() {
            return Err(match (previous, after.is_empty()) {
                (None, true) => format!("`{text}` has no unit"),
                (Some(_), true) => format!("`{text}`: `{number}` has no unit"),
                (_, false) => {
                    format!("`{after}` is not a unit (the units are ns, us, ms, s, m, h)")
                }
            });
        }
        let Some(&(_, unit_nanos)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(format!(
                "`{unit}` is not a unit (the units are ns, us, ms, s, m, h)"
            ));
        };
        if let Some((previous, fraction)) = previous {
            // `us` and `µs`, of one length, are one unit.
            if unit_nanos >= previous {
                return Err(format!(
                    "`{text}`: the units of a compound duration go from largest to smallest, each once"
                ));
            }
            if fraction {
                return Err(format!(
                    "`{text}`: only the last part of a compound duration may have a fraction, such as \"1m30.5s\""
                ));
            }
        }
        let amount: f64 = number
            .parse()
            .map_err(|_| format!("`{number}` is not a number"))?;
        let part = (amount * unit_nanos as f64).round();
        if part >= u64::MAX as f64 {
            return Err(format!("`{text}` is too long"));
        }
        if part == 0.0 && amount != 0.0 {
            return Err(format!("`{number}{unit}` is below one nanosecond"));
        }
        nanos += part as u128;
        if nanos > u128::from(u64::MAX) {
            return Err(format!("`{text}` is too long"));
        }
        previous = Some((unit_nanos, number.contains('.')));
        rest = after.trim_start();
    }
    if previous.is_none() {
        return Err("an empty string is not a duration".to_owned());
    }
    Ok(std::time::Duration::from_nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        for (text, expected) in [
            ("450ms", ms(450)),
            ("1.5s", ms(1500)),
            ("2m", s(120)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("10ns", Duration::from_nanos(10)),
            ("1h", s(3600)),
            ("0s", Duration::ZERO),
            (".5s", ms(500)),
            ("450 ms", ms(450)),
            (" 2m ", s(120)),
            // Compound: units from largest to smallest, each once.
            ("1m30s", s(90)),
            ("1h30m", s(5400)),
            ("2m 30s", s(150)),
            ("1h2m3s4ms5us6ns", s(3723) + Duration::from_nanos(4_005_006)),
            ("1m30.5s", ms(90_500)),
            ("1s500ms", ms(1500)),
            ("1m0s", s(60)),
        ] {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn refused_durations() {
        for (text, why) in [
            ("450", "`450` has no unit"),
            ("", "an empty string is not a duration"),
            ("ms", "`ms` does not start with a number"),
            ("fast", "`fast` does not start with a number"),
            ("1.2.3s", "`1.2.3` is not a number"),
            ("5 years", "`years` is not a unit (the units are ns, us, ms, s, m, h)"),
            ("10 parsecs", "`parsecs` is not a unit (the units are ns, us, ms, s, m, h)"),
            ("5!", "`!` is not a unit (the units are ns, us, ms, s, m, h)"),
            ("0.1ns", "`0.1ns` is below one nanosecond"),
            ("1s0.1ns", "`0.1ns` is below one nanosecond"),
            ("6000000h", "`6000000h` is too long"),
            ("500000h500000h", "`500000h500000h`: the units of a compound duration go from largest to smallest, each once"),
            ("30s1m", "`30s1m`: the units of a compound duration go from largest to smallest, each once"),
            ("1s1s", "`1s1s`: the units of a compound duration go from largest to smallest, each once"),
            ("1us1µs", "`1us1µs`: the units of a compound duration go from largest to smallest, each once"),
            ("1.5m30s", "`1.5m30s`: only the last part of a compound duration may have a fraction, such as \"1m30.5s\""),
            ("1m30", "`1m30`: `30` has no unit"),
            ("1m, 30s", "`1m, 30s`: `, 30s` is not a number and a unit"),
            ("1m-30s", "`1m-30s`: `-30s` is not a number and a unit"),
        ] {
            assert_eq!(parse_duration(text), Err(why.to_owned()), "{text}");
        }
        // The sum of parts that each fit may not.
        assert_eq!(
            parse_duration("5124095h59m"),
            Err("`5124095h59m` is too long".to_owned())
        );
    }
}
