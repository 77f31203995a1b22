#[too_busy(max_lag = "50ms", max_in_flight = 256, max_latency = "200ms")]
async fn handler(State(app): State<App>, Json(order): Json<Order>) -> impl IntoResponse {
    if order.items.is_empty() {
        return (StatusCode::BAD_REQUEST, "empty order").into_response();
    }
    app.place(order).await.into_response()
}
