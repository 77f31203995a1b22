use resilient::{breaker, Rejected};

#[derive(Debug, PartialEq)]
enum ParseError {
    Empty,
    NotANumber,
    Refused,
}

impl From<Rejected> for ParseError {
    fn from(_: Rejected) -> Self {
        ParseError::Refused
    }
}

impl From<std::num::ParseIntError> for ParseError {
    fn from(_: std::num::ParseIntError) -> Self {
        ParseError::NotANumber
    }
}

#[breaker(error_threshold = 10)]
async fn parse(text: &str) -> Result<u32, ParseError> {
    if text.is_empty() {
        return Err(ParseError::Empty);
    }
    let n: u32 = text.trim().parse()?;
    if n == 0 {
        return Ok(1);
    }
    Ok(n * 2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(parse("21").await, Ok(42));
    assert_eq!(parse("0").await, Ok(1));
    assert_eq!(parse("").await, Err(ParseError::Empty));
    assert_eq!(parse("x").await, Err(ParseError::NotANumber));
}
