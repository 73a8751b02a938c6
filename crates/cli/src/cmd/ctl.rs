//! `numakit ctl`: talks to a running daemon over its control socket
//! (root, or the configured group): status, exclude, include, forget,
//! reload, decisions.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use numakit::daemon::ctl::{self, Request};
use numakit::daemon::settings::Settings;

use crate::Failure;

/// `numakit ctl`.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The daemon's control socket (default: the one in --config, else /run/numakit/daemon.sock).
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,
    /// Take the socket path from this daemon configuration file.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Print the daemon's answer as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub what: CtlCommand,
}

/// `numakit ctl` subcommands.
#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// The daemon's state and counters.
    Status,
    /// Never touch a process (PID) or every process of a command name (NAME).
    Exclude {
        /// PID or command name.
        #[arg(allow_hyphen_values = true)]
        target: String,
    },
    /// Undo an exclusion; manage it even outside the configured include lists.
    Include {
        /// PID or command name.
        #[arg(allow_hyphen_values = true)]
        target: String,
    },
    /// Drop a PID or command name from both lists and forget the harm it was remembered for.
    Forget {
        /// PID or command name.
        #[arg(allow_hyphen_values = true)]
        target: String,
    },
    /// Re-read the configuration file.
    Reload,
    /// The last decisions, one JSON line each.
    Decisions {
        /// How many.
        #[arg(long, short = 'n', default_value_t = 20)]
        last: usize,
    },
}

/// The socket path from the arguments.
pub fn socket_path(socket: Option<&PathBuf>, config: Option<&PathBuf>) -> Result<PathBuf, Failure> {
    if let Some(s) = socket {
        return Ok(s.clone());
    }
    if let Some(c) = config {
        let text = std::fs::read_to_string(c)
            .map_err(|e| Failure::usage(format!("cannot read --config {}: {e}", c.display())))?;
        let s = Settings::from_toml(&text, &c.display().to_string()).map_err(|e| Failure::usage(e.to_string()))?;
        return Ok(s.socket);
    }
    Ok(Settings::default().socket)
}

/// Runs `numakit ctl`.
pub fn run(args: &CtlArgs) -> anyhow::Result<u8> {
    let socket = socket_path(args.socket.as_ref(), args.config.as_ref())?;
    let req = match &args.what {
        CtlCommand::Status => Request::Status,
        CtlCommand::Exclude { target } => Request::Exclude { target: target.clone() },
        CtlCommand::Include { target } => Request::Include { target: target.clone() },
        CtlCommand::Forget { target } => Request::Forget { target: target.clone() },
        CtlCommand::Reload => Request::Reload,
        CtlCommand::Decisions { last } => Request::Decisions { last: *last },
    };
    let resp = ctl::request(&socket, &req, Duration::from_secs(30)).map_err(|e| Failure::system(e.to_string()))?;
    if !resp.ok {
        return Err(Failure::system(resp.error.unwrap_or_else(|| "the daemon refused".into())).into());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&resp.data)?);
        return Ok(0);
    }
    match &args.what {
        CtlCommand::Decisions { .. } => {
            for line in resp.data.as_array().into_iter().flatten() {
                println!("{line}");
            }
        }
        CtlCommand::Status => print!("{}", status_text(&resp.data)),
        _ => println!("{}", resp.data["done"].as_str().unwrap_or("done")),
    }
    Ok(0)
}

fn status_text(d: &serde_json::Value) -> String {
    let c = &d["counters"];
    let n = |k: &str| c[k].as_f64().unwrap_or(0.0);
    let mut out = String::new();
    out.push_str(&format!(
        "daemon pid {} since {}{}\n",
        d["pid"],
        d["started"].as_str().unwrap_or("?"),
        if d["dry_run"].as_bool() == Some(true) { " (dry run)" } else { "" }
    ));
    if let Some(why) = d["deferred"].as_str() {
        out.push_str(&format!("deferred: {why}\n"));
    }
    out.push_str(&format!(
        "scans {} (last {:.2} ms CPU, {} processes, {} candidates), interval {} s\n",
        n("scans"),
        n("last_scan_cpu_seconds") * 1e3,
        n("processes"),
        n("candidates"),
        d["interval_s"]
    ));
    out.push_str(&format!(
        "binds {}, migrations {} ({} pages read back), reverts {}, failures {}, exited first {}\n",
        n("binds_total"),
        n("migrations_total"),
        n("pages_migrated_total"),
        n("reverts_total"),
        n("failures_total"),
        n("gone_total")
    ));
    for m in d["managed"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  pid {} ({}) on nodes {}{}\n",
            m["pid"],
            m["comm"].as_str().unwrap_or("?"),
            m["cpu_nodes"].as_str().unwrap_or("?"),
            if m["judged"].as_bool() == Some(true) { ", judged" } else { ", being judged" }
        ));
    }
    out.push_str(&format!("excluded: {} {}\n", d["excluded"]["pids"], d["excluded"]["comms"]));
    let rt = &d["run_times"];
    if rt["runs"].as_u64().unwrap_or(0) > 0 {
        out.push_str(&format!("run times learnt: {} runs of {} command names\n", rt["runs"], rt["commands"]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::status_text;

    #[test]
    fn status_text_says_what_the_daemon_learnt() {
        let mut d = serde_json::json!({"pid": 7, "started": "2026-11-25T00:00:00Z", "counters": {}, "interval_s": 15,
            "managed": [{"pid": 42, "comm": "reco", "cpu_nodes": "1", "judged": true}],
            "excluded": {"pids": [], "comms": []}, "run_times": {"commands": 2, "runs": 5}});
        let t = status_text(&d);
        assert!(t.contains("pid 42 (reco) on nodes 1, judged"), "{t}");
        assert!(t.contains("run times learnt: 5 runs of 2 command names"), "{t}");
        d["run_times"] = serde_json::json!({"commands": 0, "runs": 0});
        assert!(!status_text(&d).contains("run times"));
    }
}
