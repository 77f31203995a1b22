/// Takes a payment, shedding load by its own name.
#[too_busy(name = "checkout", max_in_flight = 64)]
pub async fn checkout(order: Order) -> Result<Receipt, AppError> {
    payments().charge(&order).await
}

/// Looks a user up, raced under its own name.
#[race_retry(name = "users.lookup", after = "100ms", total = "300ms")]
pub async fn lookup(id: u64) -> Result<User, DbError> {
    db().user(id).await
}
