//! One panic policy for both C APIs: every `extern "C"` function of
//! ffi/src reaches `guard` (lib.rs), which catches unwinding, either
//! directly or through helpers that do (`with_conn`, `with_cfg`, ...). The
//! check reads the sources: a function is guarded if its body calls
//! `guard(` or calls a guarded function. (src/tests.rs and
//! src/quiche/tests.rs show a panic inside turning into the error value.)

use std::collections::BTreeSet;
use std::path::Path;

/// The index just past the bracket closing the one at `open`.
fn closing(text: &str, open: usize, (o, c): (u8, u8)) -> usize {
    let mut depth = 0;
    for (i, b) in text.bytes().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    text.len()
}

/// Each function with a body in `text`: name, whether `extern "C"`, body.
fn functions(text: &str) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("fn ").map(|i| i + from) {
        from = at + 3;
        if at > 0 && text.as_bytes()[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let name: String = text[from..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let Some(params) = text[from..].find('(').map(|i| i + from) else { break };
        let after = closing(text, params, (b'(', b')'));
        let (Some(body), semi) = (text[after..].find('{'), text[after..].find(';')) else { continue };
        if name.is_empty() || semi.is_some_and(|s| s < body) {
            continue;
        }
        let start = after + body;
        let end = closing(text, start, (b'{', b'}'));
        let before = &text.as_bytes()[at.saturating_sub(24)..at];
        let is_extern = before.windows(10).any(|w| w == b"extern \"C\"");
        out.push((name, is_extern, text[start..end].to_string()));
    }
    out
}

/// The names `body` calls: identifiers followed by `(`.
fn called(body: &str) -> BTreeSet<&str> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = BTreeSet::new();
    let mut rest = body;
    while let Some(start) = rest.find(ident) {
        let len = rest[start..].find(|c: char| !ident(c)).unwrap_or(rest.len() - start);
        let (name, after) = (&rest[start..start + len], &rest[start + len..]);
        if after.trim_start().starts_with('(') {
            out.insert(name);
        }
        rest = after;
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).expect("read src").flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(std::fs::read_to_string(&p).expect("read source"));
        }
    }
}

/// Names of the `extern "C"` functions that never reach `guard`. A call
/// counts as guarded only if every function of that name is (names repeat
/// across modules).
fn unguarded(texts: &[String]) -> Vec<String> {
    let fns: Vec<(String, bool, String)> = texts.iter().flat_map(|t| functions(t)).collect();
    let calls: Vec<BTreeSet<&str>> = fns.iter().map(|f| called(&f.2)).collect();
    let mut guarded = vec![false; fns.len()];
    let name_guarded = |g: &[bool], name: &str| fns.iter().zip(g).all(|(f, ok)| f.0 != name || *ok);
    loop {
        let names: BTreeSet<&str> =
            fns.iter().map(|f| f.0.as_str()).filter(|n| name_guarded(&guarded, n)).collect();
        let new: Vec<usize> = (0..fns.len())
            .filter(|&i| {
                !guarded[i] && (calls[i].contains("guard") || calls[i].iter().any(|c| names.contains(c)))
            })
            .collect();
        if new.is_empty() {
            break;
        }
        new.into_iter().for_each(|i| guarded[i] = true);
    }
    let mut bad: Vec<String> = fns
        .iter()
        .zip(&guarded)
        .filter(|((_, e, _), ok)| *e && !**ok)
        .map(|((n, _, _), _)| n.clone())
        .collect();
    bad.sort();
    bad
}

#[test]
fn every_extern_c_function_goes_through_guard() {
    let mut texts = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut texts);
    let all: usize = texts.iter().map(|t| functions(t).iter().filter(|f| f.1).count()).sum();
    assert!(all > 280, "found only {all} extern \"C\" functions");
    let bad = unguarded(&texts);
    assert!(bad.is_empty(), "extern \"C\" functions not reaching guard(): {bad:?}");
}

#[test]
fn the_check_sees_direct_and_indirect_guards_and_misses() {
    let text = r#"
        fn helper(x: i32) -> i32 { guard(0, || x) }
        fn twice() -> i32 { helper(1) }
        pub extern "C" fn direct() -> i32 { guard(-1, || 0) }
        pub unsafe extern "C" fn indirect() -> i32 { twice() }
        pub extern "C" fn bare(p: *const u8) -> i32 { unsafe { *p as i32 } }
        pub extern "C" fn name_only() -> i32 { let guard = 1; guard }
    "#;
    assert_eq!(unguarded(&[text.to_string()]), ["bare", "name_only"]);
}
