//! Asks the approval agent, answers it, and resumes:
//! `cargo run -p approval-example --bin client -- [yes|no] [URL]`
//! (default `yes` and `http://127.0.0.1:8000/approval`).

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args = std::env::args().skip(1);
    let approve = args.next().is_none_or(|a| a == "yes" || a == "y");
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:8000/approval".into());
    let exchange = approval_example::ask_and_answer(&url, approve).await?;
    println!("agent asks: {}", exchange.question);
    println!("you answer: {}", if approve { "yes" } else { "no" });
    println!("agent says: {}", exchange.reply);
    Ok(())
}
