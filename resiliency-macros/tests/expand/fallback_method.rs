impl Profiles {
    #[breaker(count_if = ApiError::is_outage, fallback = Self::cached)]
    async fn profile(&self, id: UserId, Json(query): Json<Query>) -> Result<Profile, ApiError> {
        self.api.profile(id, &query).await
    }
}
