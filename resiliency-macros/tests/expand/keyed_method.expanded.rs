impl Client {
    async fn get<T: DeserializeOwned>(
        &self,
        host: &str,
        path: impl AsRef<str>,
    ) -> anyhow::Result<T> {
        {
            fn breaker_site() {}
            static BREAKER: ::resiliency::__private::KeyedSite = ::resiliency::__private::KeyedSite::new(
                || ::resiliency::__private::name_of(breaker_site),
                |breaker| {
                    breaker
                        .error_window(::core::time::Duration::from_secs(30))
                        .failure_rate(0.5)
                        .min_calls(20)
                },
            );
            ::resiliency::__private::KeyedSite::breaker(&BREAKER, &host)
        }
            .call_with(
                async move {
                    if false {
                        return ::resiliency::__private::body_returns::<
                            anyhow::Result<T>,
                        >();
                    }
                    self.http.get(host, path.as_ref()).await
                },
                ::resiliency::__private::every_error,
                ::resiliency::__private::hint_reader!(
                    < anyhow::Result < T > as ::resiliency::__private::IsResult > ::Err
                ),
            )
            .await
    }
}
