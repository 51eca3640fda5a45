//! Slurm's hostlist expression: `spark-[2,5]`, `gb10-[01-03,07]`, `login,spark-4`. Names that
//! end in a number and share the rest are folded into one bracket (ranges of consecutive
//! numbers as `a-b`, zero padding kept: `01` and `1` are different names); any other name is
//! listed as it is. What `sbatch --exclude`, `scontrol show hostnames` and `-w` read. Pure.

/// A name split into what comes before its trailing number, and the number's digits.
fn split(name: &str) -> (&str, &str) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    name.split_at(name.len() - digits)
}

/// `names` as a person reads them: one hostlist range where they make one (`n[0001-1024]`),
/// else each name, in order, the last joined by `and` (`spark-a and spark-b`).
pub fn spoken(names: &[&str]) -> String {
    let list = compress(names);
    if list.contains('[') && !list.contains(',') || names.len() < 2 {
        return list;
    }
    let mut v: Vec<&str> = names.to_vec();
    v.sort_unstable();
    v.dedup();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => list,
    }
}

/// `names` as one hostlist expression, in the order the groups first appear, each group's
/// numbers ascending; duplicates once.
pub fn compress(names: &[&str]) -> String {
    // (prefix, digit width or 0 for unpadded, numbers); a name without a number is its own group
    let mut groups: Vec<(String, usize, Vec<u64>)> = Vec::new();
    let mut plain: Vec<(usize, String)> = Vec::new();
    for name in names {
        let (prefix, digits) = split(name);
        let n = match digits.parse::<u64>() {
            Ok(n) if !digits.is_empty() && digits.len() <= 18 => n,
            _ => {
                if !plain.iter().any(|(_, p)| p == name) {
                    plain.push((groups.len() + plain.len(), name.to_string()));
                }
                continue;
            }
        };
        let width = if digits.len() > 1 && digits.starts_with('0') {
            digits.len()
        } else {
            0
        };
        match groups
            .iter_mut()
            .find(|(p, w, _)| p == prefix && *w == width)
        {
            Some((_, _, ns)) => ns.push(n),
            None => groups.push((prefix.to_string(), width, vec![n])),
        }
    }
    let mut out: Vec<(usize, String)> = plain;
    let mut order = 0;
    for (prefix, width, mut ns) in groups {
        while out.iter().any(|(i, _)| *i == order) {
            order += 1;
        }
        ns.sort_unstable();
        ns.dedup();
        let num = |n: u64| format!("{n:0width$}");
        let text = if ns.len() == 1 {
            format!("{prefix}{}", num(ns[0]))
        } else {
            format!("{prefix}[{}]", ranges(&ns, num))
        };
        out.push((order, text));
        order += 1;
    }
    out.sort_by_key(|(i, _)| *i);
    out.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

/// `1,2,3,5` as `1-3,5`.
fn ranges(ns: &[u64], num: impl Fn(u64) -> String) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ns.len() {
        let mut j = i;
        while j + 1 < ns.len() && ns[j + 1] == ns[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            num(ns[i])
        } else {
            format!("{}-{}", num(ns[i]), num(ns[j]))
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The most names one expression may expand to (a typo like `n[1-99999999]` is refused).
pub const MAX_EXPANDED: usize = 100_000;

/// A hostlist expression's names, in order: `spark-[1-3,7],login` is `spark-1`, `spark-2`,
/// `spark-3`, `spark-7`, `login`; zero padding kept (`gb10-[01-03]`); one bracket per name.
pub fn expand(expr: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut items = Vec::new();
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("`{expr}`: `]` without `[`"))?
            }
            ',' if depth == 0 => {
                items.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("`{expr}`: `[` without `]`"));
    }
    items.push(&expr[start..]);
    for item in items.into_iter().filter(|i| !i.is_empty()) {
        let Some((prefix, rest)) = item.split_once('[') else {
            out.push(item.to_string());
            continue;
        };
        let (inner, suffix) = rest.split_once(']').unwrap_or((rest, ""));
        for part in inner.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let bad = || format!("`{item}`: `{part}` is not a number or a range");
            let (lo, hi): (u64, u64) =
                (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
            if hi < lo || (hi - lo) as usize >= MAX_EXPANDED - out.len().min(MAX_EXPANDED) {
                return Err(format!(
                    "`{item}`: `{part}` is empty or names too many hosts"
                ));
            }
            let width = if a.len() > 1 && a.starts_with('0') {
                a.len()
            } else {
                0
            };
            for n in lo..=hi {
                out.push(format!("{prefix}{n:0width$}{suffix}"));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{compress, expand};

    #[test]
    fn expands_what_it_compresses() {
        let names = expand("spark-[1-3,7],login,gb10-[01-02]").unwrap();
        assert_eq!(
            names,
            [
                "spark-1", "spark-2", "spark-3", "spark-7", "login", "gb10-01", "gb10-02"
            ]
        );
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(expand(&compress(&refs)).unwrap(), names);
        assert!(expand("n[3-1]").is_err() && expand("n[1-x]").is_err() && expand("n[1").is_err());
        assert!(expand("n[1-999999999]").is_err());
    }

    #[test]
    fn numbered_names_fold_into_brackets_with_ranges() {
        assert_eq!(compress(&["spark-2", "spark-5"]), "spark-[2,5]");
        assert_eq!(compress(&["spark-2"]), "spark-2");
        assert_eq!(
            compress(&["n3", "n1", "n2", "n7", "n8", "n2"]),
            "n[1-3,7-8]"
        );
        assert_eq!(compress(&["gb10-01", "gb10-03", "gb10-02"]), "gb10-[01-03]");
        assert_eq!(compress(&[]), "");
    }

    #[test]
    fn other_names_stay_as_they_are_in_their_order() {
        assert_eq!(
            compress(&["login", "spark-4", "spark-1", "head"]),
            "login,spark-[1,4],head"
        );
        assert_eq!(compress(&["host-a", "host-b"]), "host-a,host-b");
        // zero padding is part of the name
        assert_eq!(compress(&["n01", "n2"]), "n01,n2");
    }

    #[test]
    fn spoken_lists_read_as_words_unless_they_make_a_range() {
        assert_eq!(
            super::spoken(&["spark-b", "spark-a"]),
            "spark-a and spark-b"
        );
        assert_eq!(super::spoken(&["a", "c", "b"]), "a, b and c");
        assert_eq!(super::spoken(&["n01", "n02", "n03"]), "n[01-03]");
        assert_eq!(super::spoken(&["n01"]), "n01");
    }
}
