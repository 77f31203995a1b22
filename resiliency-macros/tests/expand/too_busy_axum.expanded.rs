async fn handler(State(app): State<App>, Json(order): Json<Order>) -> impl IntoResponse {
    match (
        {
            fn too_busy_site() {}
            static TOO_BUSY: ::resiliency::__private::TooBusySite = ::resiliency::__private::TooBusySite::new(
                || ::resiliency::__private::name_of(too_busy_site),
                |guard| {
                    guard
                        .max_lag(::core::time::Duration::from_millis(50))
                        .max_in_flight(256)
                        .max_latency(::core::time::Duration::from_millis(200))
                },
            );
            TOO_BUSY.guard()
        }
            .admit_free(),
        async move {
            ::resiliency::__private::into_response(
                async move {
                    if order.items.is_empty() {
                        return (StatusCode::BAD_REQUEST, "empty order").into_response();
                    }
                    app.place(order).await.into_response()
                }
                    .await,
            )
        },
    ) {
        (::core::result::Result::Ok(()), body) => body.await,
        (::core::result::Result::Err(site), body) => site.respond(body).await,
    }
}
