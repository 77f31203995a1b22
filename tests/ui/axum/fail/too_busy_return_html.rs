use axum::response::Html;
use resilient::too_busy;

#[too_busy]
async fn page() -> Html<&'static str> {
    Html("<h1>hi</h1>")
}

fn main() {}
