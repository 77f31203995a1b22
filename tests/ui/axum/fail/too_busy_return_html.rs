use axum::response::Html;
use resiliency::too_busy;

#[too_busy]
async fn page() -> Html<&'static str> {
    Html("<h1>hi</h1>")
}

fn main() {}
