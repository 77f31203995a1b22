use resiliency::race_retry::RaceRetry;
use resiliency::Rejected;

#[derive(Debug)]
struct DbError;

impl From<Rejected> for DbError {
    fn from(_: Rejected) -> Self {
        DbError
    }
}

async fn lookup(race: &'static RaceRetry) -> Result<u32, DbError> {
    race.run_hinted(|| async { Ok(1) }).await
}

fn main() {
    let _ = lookup;
}
