//! Shell quoting for values put into commands.

/// Quote `s` for a POSIX shell. Words made only of characters no shell reads specially are left
/// bare (addresses, device names, `NCCL_IB_HCA=a,b`); anything else is single-quoted. `None` for
/// a NUL byte, which no shell word can hold.
pub fn quote(s: &str) -> Option<String> {
    if is_bare(s) {
        return Some(s.to_string());
    }
    if s.contains('\0') {
        return None;
    }
    shlex::try_quote(s).ok().map(|c| c.into_owned())
}

/// Does `s` stand as a shell word as it is (what [`quote`] leaves bare)?
pub(crate) fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'-' | b'_' | b'.' | b'/' | b':' | b'@' | b',' | b'=' | b'+' | b'%'
                )
        })
        && !s.starts_with('=')
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn bare_when_safe_quoted_otherwise() {
        assert_eq!(quote("rocep1s0f0").as_deref(), Some("rocep1s0f0"));
        assert_eq!(quote("a,b").as_deref(), Some("a,b"));
        assert_eq!(quote("").as_deref(), Some("''"));
        assert_eq!(
            quote("$(touch /tmp/x)").as_deref(),
            Some("'$(touch /tmp/x)'")
        );
        assert_eq!(quote("it's").as_deref(), Some("\"it's\""));
        assert_eq!(quote("a\0b"), None);
    }

    #[test]
    fn quoted_values_survive_a_real_shell() {
        for v in [
            "$(touch /tmp/fabricplan-x)",
            "`id`",
            "a b; c",
            "it's \"q\"",
            "x\\y",
            "*",
            "~root",
            "!x",
            "^a",
        ] {
            let q = quote(v).unwrap();
            let out = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("printf %s {q}"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), v, "quoted as {q}");
        }
    }
}
