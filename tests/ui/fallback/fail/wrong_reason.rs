use resiliency::too_busy;

#[derive(Debug)]
struct AppError;

impl From<resiliency::Rejected> for AppError {
    fn from(_: resiliency::Rejected) -> Self {
        AppError
    }
}

// Without `fallback_on = "errors"`, the reason is the `Rejected`, not the fn's error.
fn busy(_path: &str, _why: AppError) -> Result<String, AppError> {
    Ok(String::new())
}

#[too_busy(fallback = busy)]
async fn page(path: &str) -> Result<String, AppError> {
    Ok(path.to_owned())
}

fn main() {}
