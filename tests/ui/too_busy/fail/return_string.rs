use resiliency::too_busy;

#[too_busy]
async fn handler() -> String {
    String::from("ok")
}

fn main() {}
