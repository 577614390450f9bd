//! Serves the approval agent: `cargo run -p approval-example --bin server [PORT]`
//! (default 8000), at `POST http://127.0.0.1:PORT/approval`.

use std::sync::Arc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port = std::env::args().nth(1).unwrap_or_else(|| "8000".into());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("POST http://{}/approval", listener.local_addr()?);
    // Serves until SIGINT/SIGTERM, then lets in-flight runs finish.
    approval_example::router(Arc::default())
        .serve(listener)
        .await
}
