async fn handler(State(app): State<App>, Json(order): Json<Order>) -> impl IntoResponse {
    {
        fn too_busy_site() {}
        static TOO_BUSY: ::resilient::__private::TooBusySite = ::resilient::__private::TooBusySite::new(
            || ::resilient::__private::name_of(too_busy_site),
            |guard| {
                guard
                    .max_lag(::core::time::Duration::from_millis(50))
                    .max_in_flight(256)
                    .max_latency(::core::time::Duration::from_millis(200))
            },
        );
        TOO_BUSY.guard()
    }
        .respond(async move {
            ::resilient::__private::into_response(
                async move {
                    if order.items.is_empty() {
                        return (StatusCode::BAD_REQUEST, "empty order").into_response();
                    }
                    app.place(order).await.into_response()
                }
                    .await,
            )
        })
        .await
}
