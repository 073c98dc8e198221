//! Finding a program the tests run beside the daemon, shared by the test crates that need one.
use std::path::PathBuf;

/// The program named by the environment variable `env`, else `name` on PATH, else None.
pub fn find_tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
