impl Client {
    #[breaker(key = host, failure_rate = 0.5, min_calls = 20, error_window = "30s")]
    async fn get<T: DeserializeOwned>(&self, host: &str, path: impl AsRef<str>) -> anyhow::Result<T> {
        self.http.get(host, path.as_ref()).await
    }
}
