/// Renders a report on the caller's thread.
pub fn render(report: &Report) -> Result<Pdf, AppError> {
    {
        fn too_busy_site() {}
        static TOO_BUSY: ::resiliency::__private::TooBusySite = ::resiliency::__private::TooBusySite::new(
            || ::resiliency::__private::name_of(too_busy_site),
            |guard| {
                guard.max_in_flight(8).max_latency(::core::time::Duration::from_secs(2))
            },
        );
        TOO_BUSY.guard()
    }
        .call_blocking(move || -> Result<Pdf, AppError> {
            let pdf = report.layout()?.render()?;
            Ok(pdf)
        })
}
