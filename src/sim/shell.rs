//! Reading the scripts the runner sends, the way `/bin/sh` would split them: simple commands,
//! quote removal, redirections dropped. Only what the simulated fabric needs to recognise a
//! command; nothing is ever executed.

use std::collections::BTreeMap;

/// Split `script` into simple commands (word lists). Separators: newline, `;`, `&&`, `||`, `|`,
/// `&`. Quotes are removed (`'...'`, `"..."`, `\x`); redirections (`<f`, `>f`, `2>&1`,
/// `2>/dev/null`) are dropped with their targets.
pub(crate) fn commands(script: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut cmd: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut skip_target = false;
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let finish_word =
        |word: &mut String, in_word: &mut bool, skip: &mut bool, cmd: &mut Vec<String>| {
            if *in_word {
                if *skip {
                    *skip = false;
                } else {
                    cmd.push(std::mem::take(word));
                }
            }
            word.clear();
            *in_word = false;
        };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => finish_word(&mut word, &mut in_word, &mut skip_target, &mut cmd),
            '\n' | ';' | '&' | '|' => {
                finish_word(&mut word, &mut in_word, &mut skip_target, &mut cmd);
                if (c == '&' || c == '|') && chars.get(i + 1) == Some(&c) {
                    i += 1;
                }
                if !cmd.is_empty() {
                    out.push(std::mem::take(&mut cmd));
                }
            }
            '<' | '>' => {
                // a word of digits glued to the operator is a file descriptor: drop it
                if in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                } else {
                    finish_word(&mut word, &mut in_word, &mut skip_target, &mut cmd);
                }
                if chars.get(i + 1) == Some(&'>') {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&'&') {
                    // >&1, 2>&1: the target is a descriptor
                    i += 1;
                    while chars
                        .get(i + 1)
                        .is_some_and(|d| d.is_ascii_digit() || *d == '-')
                    {
                        i += 1;
                    }
                } else {
                    skip_target = true;
                }
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i = double_quoted(&chars, i, &mut word);
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.get(i + 1) {
                    if *n != '\n' {
                        word.push(*n);
                    }
                    i += 1;
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
        i += 1;
    }
    finish_word(&mut word, &mut in_word, &mut skip_target, &mut cmd);
    if !cmd.is_empty() {
        out.push(cmd);
    }
    out
}

/// The text of the double-quoted string opening at `chars[open]`, pushed to `word` with its
/// backslash escapes (`\"`, `\\`, `\$`, `` \` ``, a newline) removed: the index of its closing
/// quote (or the end).
fn double_quoted(chars: &[char], open: usize, word: &mut String) -> usize {
    let mut i = open + 1;
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\'
            && chars
                .get(i + 1)
                .is_some_and(|n| matches!(n, '"' | '\\' | '$' | '`' | '\n'))
        {
            i += 1;
        }
        word.push(chars[i]);
        i += 1;
    }
    i
}

/// A tool invocation found in a script, with the environment exported before it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invocation {
    /// The tool's base name (`ib_write_bw`, `mpirun`, `ping`...).
    pub tool: String,
    /// The words after the tool name.
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// The last command of a script that runs a tool, past `exec`, `timeout [-k N] N`, `env K=V`,
/// with the `export K=V` seen before it.
pub(crate) fn invocation(script: &str) -> Option<Invocation> {
    let mut env = BTreeMap::new();
    let mut found = None;
    for cmd in commands(script) {
        let mut w: &[String] = &cmd;
        if w.first().map(String::as_str) == Some("export") {
            for kv in &w[1..] {
                if let Some((k, v)) = kv.split_once('=') {
                    env.insert(k.to_string(), v.to_string());
                }
            }
            continue;
        }
        loop {
            match w.first().map(String::as_str) {
                Some("exec") | Some("nohup") | Some("setsid") | Some("{") => w = &w[1..],
                Some("env") => {
                    w = &w[1..];
                    while let Some((k, v)) = w.first().and_then(|x| x.split_once('=')) {
                        env.insert(k.to_string(), v.to_string());
                        w = &w[1..];
                    }
                }
                Some("timeout") => {
                    w = &w[1..];
                    while w.first().is_some_and(|x| x.starts_with('-')) {
                        let opt = w[0].clone();
                        w = &w[1..];
                        if (opt == "-k" || opt == "-s") && !w.is_empty() {
                            w = &w[1..];
                        }
                    }
                    if !w.is_empty() {
                        w = &w[1..];
                    }
                }
                _ => break,
            }
        }
        let Some(first) = w.first() else { continue };
        let base = first.rsplit('/').next().unwrap_or(first);
        if matches!(
            base,
            "ib_write_bw"
                | "ib_write_lat"
                | "ib_read_bw"
                | "ib_send_bw"
                | "ib_read_lat"
                | "ib_send_lat"
                | "mpirun"
                | "ping"
                | "ip"
        ) || crate::kinds::simulated::simulated(base).is_some()
        {
            found = Some(Invocation {
                tool: base.to_string(),
                args: w[1..].to_vec(),
                env: env.clone(),
            });
        }
    }
    found
}

/// The process group a readiness poll watches (`... kill -0 -PGID ...`).
pub(crate) fn ready_pgid(script: &str) -> Option<u32> {
    script.match_indices("kill -0 -").find_map(|(i, m)| {
        let digits: String = script[i + m.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::wrap;

    #[test]
    fn reads_the_runner_wrappers() {
        let env: BTreeMap<String, String> = [("NCCL_X".to_string(), "a b".to_string())]
            .into_iter()
            .collect();
        let s = wrap::server(
            36,
            &env,
            "ib_write_bw -d rocep1s0f0 -i 1 -x 3 -F --report_gbits -D 6 -s 65536 -q 1 -p 18515",
        );
        let inv = invocation(&s).unwrap();
        assert_eq!(inv.tool, "ib_write_bw");
        assert_eq!(inv.args.last().unwrap(), "18515");
        let f = wrap::foreground(36, &env, "ib_write_bw -d 'odd dev' -x 3 198.51.100.1");
        let inv = invocation(&f).unwrap();
        assert_eq!(inv.args, vec!["-d", "odd dev", "-x", "3", "198.51.100.1"]);
        assert_eq!(inv.env["NCCL_X"], "a b");
        assert_eq!(ready_pgid(&wrap::ready(4242, 18517, 15)), Some(4242));
    }

    #[test]
    fn redirections_and_separators() {
        let c = commands("a 2>&1 b >x.log </dev/null && c 'd e'\"f\" ; g|h");
        assert_eq!(
            c,
            vec![
                vec!["a".to_string(), "b".into()],
                vec!["c".into(), "d ef".into()],
                vec!["g".into()],
                vec!["h".into()]
            ]
        );
    }
}
