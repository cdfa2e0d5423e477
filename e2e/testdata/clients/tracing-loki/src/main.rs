//! Logs N events through tracing-loki to a Loki push URL, then shuts the
//! layer's background task down (it sends what is queued) and exits.
//!
//! Usage: e2e-tracing-loki URL TENANT N
//!
//! Event i: level WARN when i % 10 == 0, else INFO; fields seq and
//! trace_id ("rust-%04d"); the message `rust %04d "quoted" back\slash
//! ünïcode ✓`, with two more lines ("  at frame 1", "  at frame 2") when
//! i % 7 == 3. The layer has the labels app=e2e-rust and env=test (it adds
//! level itself), the extra field service=e2e-rust-svc (in each line's
//! JSON) and the header X-Scope-OrgID: TENANT.

use std::error::Error;
use std::process::ExitCode;

use tracing::{info, warn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

fn message(i: u32) -> String {
    let mut m = format!("rust {:04} \"quoted\" back\\slash ünïcode ✓", i);
    if i % 7 == 3 {
        m.push_str("\n  at frame 1\n  at frame 2");
    }
    m
}

async fn run() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        return Err("usage: e2e-tracing-loki URL TENANT N".into());
    }
    let url = url::Url::parse(&args[1])?;
    let tenant = &args[2];
    let n: u32 = args[3].parse()?;
    // The layer queues at most 512 events before its task runs: log in
    // rounds of at most 100, letting the task take them in between.
    let (layer, controller, task) = tracing_loki::builder()
        .label("app", "e2e-rust")?
        .label("env", "test")?
        .extra_field("service", "e2e-rust-svc")?
        .http_header("X-Scope-OrgID", tenant)?
        .build_controller_url(url)?;
    tracing_subscriber::registry().with(layer).init();
    let task = tokio::spawn(task);
    for i in 0..n {
        let trace_id = format!("rust-{:04}", i);
        if i % 10 == 0 {
            warn!(seq = i, trace_id = trace_id.as_str(), "{}", message(i));
        } else {
            info!(seq = i, trace_id = trace_id.as_str(), "{}", message(i));
        }
        if i % 100 == 99 {
            tokio::task::yield_now().await;
        }
    }
    controller.shutdown().await;
    task.await?;
    println!("sent {}", n);
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("e2e-tracing-loki: {}", e);
            ExitCode::FAILURE
        }
    }
}
