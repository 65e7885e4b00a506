//! A cheap look at configuration text before a YAML or JSON parser sees it: refuses text nested deeper than
//! [`MAX_NESTING_DEPTH`] or larger than [`MAX_CONFIG_BYTES`], in one linear pass.
//!
//! The parsers (serde_yaml's libyaml, serde_json) spend time and stack in proportion to nesting: a
//! 100,000-deep `[[[[…` takes them seconds of CPU before they refuse it. CONFIG_DB content is four levels
//! deep (table, key, field, list of scalars) and a lab topology or scenario embedding one adds a few more,
//! so anything past [`MAX_NESTING_DEPTH`] is refused at once, with an error naming the limit.
//!
//! The depth is an over-estimate that costs one pass and no allocation per byte: flow collections (`[`, `{`)
//! count one level each (outside quoted scalars and comments; in block context only where a node can start),
//! block collections one per indentation step and one per compact `- ` or `? ` entry on a line. Block scalars
//! (`|`, `>`) are skipped whole.

/// The deepest nesting of collections accepted in configuration text (YAML or JSON).
pub const MAX_NESTING_DEPTH: usize = 64;

/// The largest configuration text accepted, in bytes (a full 64-port config_db.json is well under 1 MiB).
pub const MAX_CONFIG_BYTES: usize = 64 << 20;

/// Refuses configuration text nested deeper than [`MAX_NESTING_DEPTH`] or larger than [`MAX_CONFIG_BYTES`];
/// every reader of YAML or JSON configuration text calls it before parsing.
pub fn check_config_text(text: &str) -> Result<(), String> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "configuration text of {} bytes is larger than the limit of {MAX_CONFIG_BYTES} bytes",
            text.len()
        ));
    }
    match nesting_depth_exceeds(text.as_bytes(), MAX_NESTING_DEPTH) {
        Some(line) => Err(format!(
            "line {line}: nested deeper than the limit of {MAX_NESTING_DEPTH} levels (YAML/JSON collections)"
        )),
        None => Ok(()),
    }
}

/// Block levels the indentation stack stands for: the first (the root collection's lines) is not a
/// level of its own, so that a document that is one flow collection counts exactly its brackets.
fn block(indents: &[usize]) -> usize {
    indents.len().saturating_sub(1)
}

/// The 1-based line where the nesting first exceeds `limit`, if it does.
fn nesting_depth_exceeds(text: &[u8], limit: usize) -> Option<usize> {
    let mut flow = 0usize; // open flow collections
    let mut indents: Vec<usize> = Vec::new(); // block indentation stack (bounded by `limit`)
    let mut line = 1usize;
    let mut i = 0usize;
    // Start of line: measure indentation and handle block structure.
    let mut at_line_start = true;
    // Indentation of the current line (for block scalars).
    let mut line_indent = 0usize;
    // Compact block entries (`- `, `? `) seen on this line before anything else.
    let mut compact = 0usize;
    // Still in the run of indentation and compact entries that begins a line.
    let mut in_lead = false;
    let len = text.len();
    while i < len {
        if at_line_start {
            at_line_start = false;
            let start = i;
            while i < len && text[i] == b' ' {
                i += 1;
            }
            line_indent = i - start;
            compact = 0;
            in_lead = false;
            // Blank and comment-only lines say nothing about structure.
            let blank = i >= len || matches!(text[i], b'\n' | b'\r' | b'#');
            if flow == 0 && !blank {
                while indents.last().is_some_and(|&top| top > line_indent) {
                    indents.pop();
                }
                if indents.last().is_none_or(|&top| top < line_indent) {
                    indents.push(line_indent);
                }
                in_lead = true;
            }
            if flow + block(&indents) > limit {
                return Some(line);
            }
            continue;
        }
        let b = text[i];
        let prev = if i == 0 { b'\n' } else { text[i - 1] };
        let node_start =
            matches!(prev, b' ' | b'\t' | b'\n' | b'\r') || (flow > 0 && b",[{:".contains(&prev));
        match b {
            b'\n' => {
                line += 1;
                at_line_start = true;
                i += 1;
                continue;
            }
            b'#' if matches!(prev, b' ' | b'\t' | b'\n' | b'\r') => {
                while i < len && text[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' if node_start => {
                i += 1;
                while i < len && text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    if i < len && text[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
            b'\'' if node_start => {
                i += 1;
                while i < len {
                    if text[i] == b'\'' {
                        if text.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    if text[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
            b'[' | b'{' if flow > 0 || node_start => {
                flow += 1;
                if flow + block(&indents) + compact > limit {
                    return Some(line);
                }
            }
            b']' | b'}' if flow > 0 => flow -= 1,
            b'-' | b'?'
                if in_lead && flow == 0 && matches!(text.get(i + 1), None | Some(b' ' | b'\n' | b'\r')) =>
            {
                compact += 1;
                if flow + block(&indents) + compact > limit {
                    return Some(line);
                }
            }
            b'|' | b'>' if flow == 0 && node_start => {
                // A block scalar: the lines after this one indented deeper than it (and blank ones) are text.
                while i < len && text[i] != b'\n' {
                    i += 1;
                }
                while i < len {
                    // `i` is at a newline: look at the next line.
                    let next = i + 1;
                    let mut j = next;
                    while j < len && text[j] == b' ' {
                        j += 1;
                    }
                    let blank = j >= len || matches!(text[j], b'\n' | b'\r');
                    if blank || j - next > line_indent {
                        line += 1;
                        i = j;
                        while i < len && text[i] != b'\n' {
                            i += 1;
                        }
                    } else {
                        break;
                    }
                }
                continue;
            }
            _ => {}
        }
        if !matches!(b, b' ' | b'-' | b'?') {
            in_lead = false;
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::ConfigDb;
    use std::time::{Duration, Instant};

    const DEEP: usize = 100_000;

    /// Refused quickly, naming the limit.
    fn refused_fast(text: &str) {
        let t0 = Instant::now();
        let err = ConfigDb::from_yaml_str(text).expect_err("deep nesting must be refused");
        let took = t0.elapsed();
        assert!(err.contains(&format!("limit of {MAX_NESTING_DEPTH} levels")), "{err}");
        assert!(took < Duration::from_millis(500), "took {took:?}");
    }

    #[test]
    fn a_100k_deep_flow_sequence_is_refused_fast() {
        refused_fast(&"[".repeat(DEEP));
        refused_fast(&format!("{}{}", "[".repeat(DEEP), "]".repeat(DEEP)));
    }

    #[test]
    fn a_100k_deep_flow_mapping_is_refused_fast() {
        refused_fast(&"{a: ".repeat(DEEP));
        refused_fast(&format!("{}1{}", "{a: ".repeat(DEEP), "}".repeat(DEEP)));
    }

    #[test]
    fn a_100k_deep_json_object_is_refused_fast() {
        refused_fast(&format!("{}1{}", "{\"a\":".repeat(DEEP), "}".repeat(DEEP)));
        refused_fast(&"{\"a\": [".repeat(DEEP));
    }

    #[test]
    fn deep_block_collections_are_refused_fast() {
        refused_fast(&format!("{}x\n", "- ".repeat(DEEP)));
        let mut indented = String::new();
        for i in 0..200 {
            indented.push_str(&" ".repeat(i));
            indented.push_str("a:\n");
        }
        refused_fast(&indented);
    }

    #[test]
    fn nesting_at_the_limit_is_accepted_and_one_past_it_refused() {
        let at = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(nesting_depth_exceeds(at(MAX_NESTING_DEPTH).as_bytes(), MAX_NESTING_DEPTH), None);
        assert_eq!(nesting_depth_exceeds(at(MAX_NESTING_DEPTH + 1).as_bytes(), MAX_NESTING_DEPTH), Some(1));
        // Under the limit the parser has the last word (a sequence is not a CONFIG_DB).
        let err = ConfigDb::from_yaml_str(&at(MAX_NESTING_DEPTH)).unwrap_err();
        assert!(!err.contains("levels"), "{err}");
    }

    #[test]
    fn brackets_in_scalars_comments_and_block_text_do_not_count() {
        let deep = "[".repeat(100);
        let text = format!(
            "PORT:\n  Ethernet0:\n    description: \"{deep}\"\n    alias: '{deep}'\n    other: x{deep}\n  # {deep}\n\
             DEVICE_METADATA:\n  localhost:\n    notes: |\n      {deep}\n\n      {deep}\n    hostname: t0\n"
        );
        let db = ConfigDb::from_yaml_str(&text).unwrap();
        assert_eq!(db.tables["PORT"]["Ethernet0"]["description"], deep);
        assert_eq!(db.tables["PORT"]["Ethernet0"]["other"], format!("x{deep}"));
        assert_eq!(db.tables["DEVICE_METADATA"]["localhost"]["hostname"], "t0");
        // JSON, with escaped quotes in strings.
        let json =
            format!("{{\"PORT\": {{\"Ethernet0\": {{\"alias\": \"\\\"{deep}\", \"speed\": \"100000\"}}}}}}");
        assert_eq!(ConfigDb::from_yaml_str(&json).unwrap().tables["PORT"]["Ethernet0"]["speed"], "100000");
    }

    #[test]
    fn shipped_configs_pass_the_guard() {
        for text in [
            include_str!("../../../../../configs/t0.yaml"),
            include_str!("../../../../../configs/profiles/th_balanced.yaml"),
            include_str!("../../../../../configs/profiles/sn2700.yaml"),
            include_str!("../../../../../configs/profiles/td3.yaml"),
            include_str!("../../../../../configs/profiles/ucloud.yaml"),
        ] {
            check_config_text(text).unwrap();
            ConfigDb::from_yaml_str(text).unwrap();
        }
    }

    #[test]
    fn oversized_text_is_refused_naming_the_limit() {
        let text = " ".repeat(MAX_CONFIG_BYTES + 1);
        let err = check_config_text(&text).unwrap_err();
        assert!(err.contains(&MAX_CONFIG_BYTES.to_string()), "{err}");
    }
}
