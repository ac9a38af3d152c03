//! The operating system: kernel (from `/proc/sys/kernel`), architecture, and
//! on the live machine the distribution (`/etc/os-release`).

use crate::check::Check;
use crate::env::{read_small, Env};

pub fn probe(env: &Env) -> Check {
    let ostype = env.read(&env.proc("sys/kernel/ostype")).map(|s| s.trim().to_string());
    let release = env
        .read(&env.proc("sys/kernel/osrelease"))
        .map(|s| s.trim().to_string());
    let distro = if env.live {
        read_small("/etc/os-release".as_ref()).and_then(|t| pretty_name(&t))
    } else {
        None
    };
    let kernel = match (&ostype, &release) {
        (Some(t), Some(r)) => format!("{t} {r}"),
        (Some(t), None) => t.clone(),
        _ => std::env::consts::OS.to_string(),
    };
    let mut summary = kernel.clone();
    if let Some(d) = &distro {
        summary = format!("{d}, {summary}");
    }
    summary.push_str(&format!(" ({})", std::env::consts::ARCH));
    let c = Check::ok("os", summary)
        .detail("os", std::env::consts::OS)
        .detail("arch", std::env::consts::ARCH)
        .detail("kernel", kernel)
        .detail_opt("distribution", distro);
    if std::env::consts::OS != "linux" {
        return Check {
            status: crate::Status::Warn,
            ..c
        }
        .fix("Apsi is built and tested on Linux; on this system some probes have nothing to read");
    }
    c
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → the name.
fn pretty_name(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_name_is_unquoted() {
        assert_eq!(
            pretty_name("ID=debian\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n").unwrap(),
            "Debian GNU/Linux 12 (bookworm)"
        );
        assert_eq!(pretty_name("ID=x\n"), None);
    }
}
