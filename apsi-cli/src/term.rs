//! Terminal facts: whether to use colour.

use std::io::IsTerminal;

/// Colour on stderr only when it is a terminal and `NO_COLOR` is not set.
pub fn stderr_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}
