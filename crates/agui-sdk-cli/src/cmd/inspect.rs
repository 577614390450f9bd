//! `agui inspect`: the web inspector, and optionally its recording proxy.

use std::net::SocketAddr;

use clap::Args;

use crate::io::CliError;

/// Arguments of `agui inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// The agent URL the page starts with.
    #[arg(value_name = "URL")]
    pub url: Option<String>,
    /// Address of the page and its API.
    #[arg(long, default_value = "127.0.0.1:7777")]
    pub addr: SocketAddr,
    /// Also run the recording proxy: a front end talks to --listen as to its agent,
    /// every request goes to --upstream unchanged, and every run appears in the page.
    #[arg(long, requires = "upstream")]
    pub proxy: bool,
    /// Where the proxy forwards to (an http or https URL).
    #[arg(long, value_name = "URL", requires = "proxy")]
    pub upstream: Option<String>,
    /// Address the proxy listens on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7778")]
    pub listen: SocketAddr,
    /// Listen on addresses other than loopback (the page relays requests to any URL
    /// its users give; only do this on a network you trust).
    #[arg(long)]
    pub public: bool,
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn check_loopback(flag: &str, addr: SocketAddr, public: bool) -> Result<(), CliError> {
    if addr.ip().is_loopback() || public {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "{flag} {addr} is not a loopback address: the inspector relays requests to any URL \
         its users give, so it listens on loopback only unless --public is given"
    )))
}

/// Serves the inspector until SIGINT or SIGTERM.
pub(crate) fn inspect(args: InspectArgs) -> Result<(), CliError> {
    check_loopback("--addr", args.addr, args.public)?;
    if args.proxy {
        check_loopback("--listen", args.listen, args.public)?;
    }
    let mut config = agui_sdk_inspect::InspectorConfig::default();
    if let Some(url) = &args.url {
        agui_sdk_inspect::Inspector::check_url(url).map_err(|e| CliError::Usage(e.to_string()))?;
        config = config.default_url(url.clone());
    }
    let inspector = agui_sdk_inspect::Inspector::new(config);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::io("starting the async runtime"))?;
    rt.block_on(async move {
        // `serve` triggers the switch on SIGINT/SIGTERM.
        let shutdown = agui_sdk_server::Shutdown::new();
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(CliError::io(format!("cannot listen on {}", args.addr)))?;
        let local = listener
            .local_addr()
            .map_err(CliError::io("reading the bound address"))?;
        let mut proxy_task = None;
        if let (true, Some(upstream)) = (args.proxy, &args.upstream) {
            let router = if args.public {
                agui_sdk_inspect::proxy::public_router(inspector.clone(), upstream)
            } else {
                agui_sdk_inspect::proxy::router(inspector.clone(), upstream)
            };
            let router = router.map_err(|e| CliError::Usage(format!("--upstream: {e}")))?;
            let proxy_listener = tokio::net::TcpListener::bind(args.listen)
                .await
                .map_err(CliError::io(format!("cannot listen on {}", args.listen)))?;
            let proxy_local = proxy_listener
                .local_addr()
                .map_err(CliError::io("reading the bound address"))?;
            inspector.set_proxy(&proxy_local.to_string(), upstream);
            println!("agui inspect: proxy on http://{proxy_local} -> {upstream}");
            proxy_task = Some(tokio::spawn(agui_sdk_server::serve(
                proxy_listener,
                router,
                shutdown.clone(),
            )));
        }
        let mut page = format!("http://{local}/#token={}", inspector.token());
        if let Some(url) = &args.url {
            page.push_str("&url=");
            page.push_str(&encode_component(url));
        }
        // The line scripts and users look for.
        println!("agui inspect: open {page}");
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let served = agui_sdk_server::serve(listener, inspector.router(), shutdown).await;
        if let Some(task) = proxy_task {
            let _ = task.await;
        }
        served.map_err(CliError::io("serving"))
    })
}
