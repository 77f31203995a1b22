use resiliency::too_busy;

#[too_busy]
async fn handler() -> Result<u32, String> {
    Ok(1)
}

fn main() {}
