/// Renders a report on the caller's thread.
#[too_busy(max_in_flight = 8, max_latency = "2s")]
pub fn render(report: &Report) -> Result<Pdf, AppError> {
    let pdf = report.layout()?.render()?;
    Ok(pdf)
}
