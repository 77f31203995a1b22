/// Takes a payment, shedding load by its own name.
pub async fn checkout(order: Order) -> Result<Receipt, AppError> {
    match (
        {
            static TOO_BUSY: ::resiliency::__private::TooBusySite = ::resiliency::__private::TooBusySite::new(
                || "checkout",
                |guard| guard.max_in_flight(64),
            );
            TOO_BUSY.guard()
        }
            .admit_free(),
        async move {
            if false {
                return ::resiliency::__private::body_returns::<
                    Result<Receipt, AppError>,
                >();
            }
            payments().charge(&order).await
        },
    ) {
        (::core::result::Result::Ok(()), body) => body.await,
        (::core::result::Result::Err(site), body) => site.call(body).await,
    }
}
/// Looks a user up, raced under its own name.
pub async fn lookup(id: u64) -> Result<User, DbError> {
    {
        static RACE: ::resiliency::__private::RaceSite = ::resiliency::__private::RaceSite::new(
            || "users.lookup",
            |race| {
                race
                    .after(::core::time::Duration::from_millis(100))
                    .total(::core::time::Duration::from_millis(300))
            },
        );
        RACE.race()
    }
        .run_with(
            move || {
                let id = ::resiliency::__private::attempt_arg(&id);
                async move {
                    if false {
                        return ::resiliency::__private::body_returns::<
                            Result<User, DbError>,
                        >();
                    }
                    db().user(id).await
                }
            },
            ::resiliency::__private::hint_reader!(
                < Result < User, DbError > as ::resiliency::__private::IsResult > ::Err
            ),
        )
        .await
}
