//! The pieces of an open-loop HTTP load generator: its client and runtime, and one request timed
//! from its **scheduled** send time, so that a late sender or a slow connect counts against the
//! server (no coordinated omission).

use std::time::{Duration, Instant};

/// How a request ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Status 200.
    Accepted,
    /// Status 503.
    Refused,
    /// Any other status.
    OtherStatus,
    /// No answer within the client's timeout.
    Timeout,
    /// Another error (a refused or reset connection).
    Error,
}

/// One request: when it was scheduled (from the run's start), its latency from then, and how it
/// ended.
#[derive(Copy, Clone, Debug)]
pub struct Outcome {
    pub at: Duration,
    pub latency: Duration,
    pub kind: Kind,
}

/// reqwest over plain HTTP/1 with a pool of keep-alive connections and no limit on them (a request
/// whose turn comes while all pooled connections are busy opens a new one, as independent users
/// would), and a total `timeout` per request.
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .http1_only()
        .no_proxy()
        .timeout(timeout)
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .expect("the client builds")
}

/// A current-thread runtime for the generator, on the calling thread, pinned to CPU `cpu`.
pub fn runtime_on(cpu: usize) -> tokio::runtime::Runtime {
    super::pin_to_cpu(cpu);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client's runtime builds")
}

/// One GET of `url`, read to the end of its body; `due` is its scheduled time and `t0` the run's
/// start.
pub async fn request(client: &reqwest::Client, url: &str, due: Instant, t0: Instant) -> Outcome {
    let result = async {
        let response = client.get(url).send().await?;
        let status = response.status();
        response.bytes().await?;
        Ok::<_, reqwest::Error>(status)
    }
    .await;
    let kind = match result {
        Ok(status) if status == reqwest::StatusCode::OK => Kind::Accepted,
        Ok(status) if status == reqwest::StatusCode::SERVICE_UNAVAILABLE => Kind::Refused,
        Ok(_) => Kind::OtherStatus,
        Err(e) if e.is_timeout() => Kind::Timeout,
        Err(_) => Kind::Error,
    };
    Outcome {
        at: due - t0,
        latency: due.elapsed(),
        kind,
    }
}

/// Opens a few pooled connections to `url` (the same for every contender), then lets the server
/// idle for a moment before a run.
pub async fn warm_up(client: &reqwest::Client, url: &std::sync::Arc<str>) {
    let warm: Vec<_> = (0..8)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { client.get(&*url).send().await.map(drop) })
        })
        .collect();
    for task in warm {
        let _ = task.await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Waits for every request of a run (each answered or timed out) and returns their outcomes.
pub async fn finish(mut tasks: tokio::task::JoinSet<Outcome>) -> Vec<Outcome> {
    let mut outcomes = Vec::with_capacity(tasks.len());
    while let Some(outcome) = tasks.join_next().await {
        outcomes.push(outcome.expect("a request task does not panic"));
    }
    outcomes
}
