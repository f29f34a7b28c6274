//! Every function of quiche 0.30's C header (include/quiche.h of the quiche
//! crate in cargo's registry, a dev-dependency) is declared in libmpquic's
//! include/quiche.h and defined in libmpquic.a: a C file generated from
//! upstream's header takes the address of each, compiles against our header
//! and links against the library. Missing names are listed.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{build_lib_and_apps, root};

/// quiche 0.30's include/quiche.h in cargo's registry.
fn upstream_header() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let src = home.join("registry/src");
    let found = std::fs::read_dir(&src)
        .expect("cargo registry sources")
        .flatten()
        .map(|d| d.path().join("quiche-0.30.0/include/quiche.h"))
        .find(|p| p.exists());
    found.unwrap_or_else(|| panic!("quiche-0.30.0 not under {}; run `cargo fetch`", src.display()))
}

/// The text without `//` and `/* */` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |n| &tail[n..]);
        } else if tail.starts_with("/*") {
            rest = tail.find("*/").map_or("", |n| &tail[n + 2..]);
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out + rest
}

/// Names of the functions a header declares: `quiche_*` identifiers
/// followed by `(` (function-pointer parameters are `(*name)(`).
fn function_names(header: &Path) -> Vec<String> {
    let text = strip_comments(&std::fs::read_to_string(header).expect("read header"));
    let mut names: Vec<String> = Vec::new();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = text[from..].find("quiche_").map(|i| i + from) {
        let end = text[i..].find(|c: char| !is_ident(c)).map_or(text.len(), |n| i + n);
        let starts_word = !text[..i].ends_with(is_ident);
        if starts_word
            && text[end..].trim_start().starts_with('(')
            && !names.iter().any(|n| *n == text[i..end])
        {
            names.push(text[i..end].to_string());
        }
        from = end;
    }
    names
}

/// A C program taking the address of each function, printing their count.
fn c_program(names: &[String]) -> String {
    let refs: String = names.iter().map(|n| format!("    (void *)&{n},\n")).collect();
    format!(
        "#include <stdio.h>\n#include \"quiche.h\"\n\nstatic void *const fns[] = {{\n{refs}}};\n\n\
         int main(void) {{\n    printf(\"%zu\\n\", sizeof fns / sizeof fns[0]);\n    return 0;\n}}\n"
    )
}

/// The names the linker reported undefined.
fn undefined(stderr: &str, names: &[String]) -> Vec<String> {
    names.iter().filter(|n| stderr.contains(&format!("`{n}'"))).cloned().collect()
}

#[test]
fn every_function_of_upstream_quiche_h_links_against_libmpquic() {
    let upstream = function_names(&upstream_header());
    assert!(upstream.len() > 150, "parsed only {} functions from upstream's header", upstream.len());
    let ours = function_names(&root().join("ffi/include/quiche.h"));
    let undeclared: Vec<_> = upstream.iter().filter(|n| !ours.contains(n)).collect();
    assert!(undeclared.is_empty(), "not declared in ffi/include/quiche.h: {undeclared:?}");

    let lib = build_lib_and_apps(&[]);
    let dir = lib.join("quiche-coverage");
    std::fs::create_dir_all(&dir).expect("output dir");
    let src = dir.join("all_functions.c");
    std::fs::write(&src, c_program(&upstream)).expect("write C file");
    let exe = dir.join("all_functions");
    let cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-Wall", "-Werror", "-O0", "-I"])
        .arg(root().join("ffi/include"))
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg(lib.join("libmpquic.a"))
        .args(["-lstdc++", "-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"])
        .output()
        .expect("run cc");
    let err = String::from_utf8_lossy(&cc.stderr);
    assert!(cc.status.success(), "not defined in libmpquic: {:?}\n{err}", undefined(&err, &upstream));
    let run = Command::new(&exe).output().expect("run the program");
    assert!(run.status.success());
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), upstream.len().to_string());
}

#[test]
fn the_parser_finds_declarations_not_comments_or_callbacks() {
    let dir = std::env::temp_dir().join(format!("mpquic-quiche-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let h = dir.join("x.h");
    let text = "// quiche_in_comment(x)\n/* quiche_block(\n */ int quiche_a(int (*quiche_cb)(void));\n\
                enum quiche_t quiche_t (void);\nvoid notquiche_b(void);\n";
    std::fs::write(&h, text).unwrap();
    assert_eq!(function_names(&h), ["quiche_a", "quiche_t"]);
}
