//! 2. `#[too_busy]`: calls in flight capped, lag shed, and a limit learned (`"auto"`).
use std::time::{Duration, Instant};

use resiliency::too_busy;

use super::{show, AppError};

// ------------------------------------------------------------------------------------------------
// 2. #[too_busy]
// ------------------------------------------------------------------------------------------------

/// At most two calls at once; a third is refused at the door, without waiting in a queue.
#[too_busy(max_in_flight = 2)]
async fn render_thumbnail(n: u32) -> Result<String, AppError> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(format!("thumbnail #{n}"))
}

/// Refused while the runtime it runs on lags: with probability `(lag - 50ms) / 50ms`.
#[too_busy(max_lag = "50ms")]
async fn search() -> Result<&'static str, AppError> {
    Ok("3 results")
}

/// A connection pool of 4: each query holds a connection for 20 ms, and waits in line for one.
static POOL: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// The right in-flight limit depends on the pool, which the code does not know: learned.
#[too_busy(max_in_flight = "auto")]
async fn query_orders() -> Result<(), AppError> {
    let _connection = POOL.acquire().await.expect("the pool is never closed");
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(())
}

/// 32 clients call `query_orders` in a loop for 2 s; every 250 ms, the learned limit and what the
/// admitted calls waited.
pub(super) async fn auto_limit() {
    println!(
        "\n   #[too_busy(max_in_flight = \"auto\")]: 32 clients, a pool of 4 connections of 20ms"
    );
    let stats = std::sync::Mutex::new((0u32, 0u32, Duration::ZERO));
    let end = Instant::now() + Duration::from_secs(2);
    let client = || async {
        while Instant::now() < end {
            let started = Instant::now();
            let admitted = query_orders().await.is_ok();
            {
                let mut stats = stats.lock().unwrap();
                if admitted {
                    stats.0 += 1;
                    stats.2 += started.elapsed();
                } else {
                    stats.1 += 1;
                }
            }
            if !admitted {
                tokio::time::sleep(Duration::from_millis(5)).await; // refused: back off a little
            }
        }
    };
    let report = async {
        while Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let (admitted, refused, waited) = std::mem::take(&mut *stats.lock().unwrap());
            let limit = resiliency::settings::sites()
                .into_iter()
                .find(|(_, name)| name.ends_with("::query_orders"))
                .and_then(|(_, name)| resiliency::too_busy::get(&name)?.in_flight_limit());
            println!(
                "  limit {:>2}: {admitted:>3} admitted (mean {:>4.0?}), {refused:>3} refused",
                limit.unwrap_or(0),
                waited / admitted.max(1),
            );
        }
    };
    tokio::join!(futures::future::join_all((0..32).map(|_| client())), report);
    println!("  (no limit: 32 queued for 4 connections would wait about 160ms each)");
}

pub(super) async fn run() {
    println!("\n2. #[too_busy(max_in_flight = 2)]: four calls at once");
    let timed = |n| async move {
        let started = Instant::now();
        (render_thumbnail(n).await, started.elapsed())
    };
    let results = futures::future::join_all((1..=4).map(timed)).await;
    for (n, (result, took)) in (1..).zip(&results) {
        show(&format!("render_thumbnail({n})"), result, *took);
    }

    println!(
        "\n   #[too_busy(max_lag = \"50ms\")]: a CPU-bound job blocks the runtime's only thread"
    );
    println!("   in 200ms stretches for 1.2s; meanwhile search() is called every 20ms");
    for _ in 0..3 {
        let _ = search().await; // the first call starts the lag monitor
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "  idle: too_busy::lag() = {:.1?}",
        resiliency::too_busy::lag()
    );
    let job = tokio::spawn(async {
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(1200) {
            // Stands in for CPU-bound work: the bug this section is about.
            std::thread::sleep(Duration::from_millis(200));
            tokio::task::yield_now().await;
        }
    });
    let (mut ok, mut refused, mut peak) = (0, 0, Duration::ZERO);
    while !job.is_finished() {
        peak = peak.max(resiliency::too_busy::lag());
        match search().await {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "  during the job: {ok} calls answered, {refused} refused (too_busy::lag() peaked at {peak:.0?})"
    );
    let ended = Instant::now();
    loop {
        let result = search().await;
        if result.is_ok() {
            println!(
                "  after the job: answered again {:.0?} after it ended",
                ended.elapsed()
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
