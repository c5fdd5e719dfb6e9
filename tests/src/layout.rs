//! The house rules of shared/ARCHITECTURE.md that can be read off the source tree: no module
//! cycles at any level of any crate, no oversized source files, every folder module says its
//! purpose in its first line. Text-level on purpose: it needs no compiler plugin and runs in
//! milliseconds, and a `use` path is all it takes to create a dependency between modules.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module path inside one crate, from the crate root: `["families", "pod"]`.
pub type ModulePath = Vec<String>;

/// One crate's modules and the module paths each one refers to.
#[derive(Debug, Default)]
pub struct CrateModules {
    /// Every module of the crate (file or inline `mod x {}` is not tracked: files only).
    pub modules: BTreeSet<ModulePath>,
    /// For each module, the paths its non-test code names (`crate::a::b`, `super::c`, `self::d`),
    /// already made absolute.
    pub references: BTreeMap<ModulePath, BTreeSet<ModulePath>>,
}

/// Reads the module tree of the crate whose root file is `src/lib.rs` or `src/main.rs`.
pub fn read_crate(src: &Path) -> std::io::Result<CrateModules> {
    let mut crate_modules = CrateModules::default();
    for file in rust_files(src)? {
        let Some(module) = module_path_of(src, &file) else {
            continue;
        };
        if is_test_module(&module) {
            continue;
        }
        let text = fs::read_to_string(&file)?;
        let refs = referenced_paths(&without_tests(&strip_comments_and_strings(&text)), &module);
        crate_modules.modules.insert(module.clone());
        crate_modules
            .references
            .entry(module)
            .or_default()
            .extend(refs);
    }
    Ok(crate_modules)
}

/// Test modules may use anything beside them; they are not part of the design's graph.
fn is_test_module(module: &ModulePath) -> bool {
    module
        .last()
        .is_some_and(|m| m == "tests" || m.ends_with("_tests") || m.starts_with("tests_"))
}

/// All `.rs` files under `dir`, sorted.
pub fn rust_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs`/`main.rs` are the root. Binaries in
/// `src/bin/` are crates of their own and not part of the library's tree.
fn module_path_of(src: &Path, file: &Path) -> Option<ModulePath> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?.to_string();
    match stem.as_str() {
        "lib" | "main" if parts.is_empty() => {}
        "mod" => {}
        _ => parts.push(stem),
    }
    Some(parts)
}

/// Blanks out comments and string/char literals so their text is not read as paths.
pub fn strip_comments_and_strings(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !is_ident_byte(b[i - 1])) =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let closing: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                while j < b.len() && !b[j..].starts_with(&closing) {
                    j += 1;
                }
                i = (j + closing.len()).min(b.len());
                out.push_str("\"\"");
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            _ => {
                // Copy one whole UTF-8 character.
                let len = utf8_len(b[i]);
                out.push_str(&src[i..(i + len).min(src.len())]);
                i += len;
            }
        }
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Drops inline test modules: everything from a `#[cfg(test)]` that opens a `mod` to its
/// closing brace.
fn without_tests(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        if !(trimmed.starts_with("mod ") || trimmed.starts_with("pub(crate) mod ")) {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        match (trimmed.find('{'), trimmed.find(';')) {
            (Some(open), semi) if semi.is_none_or(|s| s > open) => {
                let body = &trimmed[open..];
                let mut depth = 0usize;
                let mut end = body.len();
                for (k, c) in body.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &body[end..];
            }
            (_, Some(semi)) => rest = &trimmed[semi + 1..],
            _ => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// Every path rooted at `crate`, `super` or `self` that `src` names, expanded from `use` trees
/// and made absolute against `module`.
pub fn referenced_paths(src: &str, module: &ModulePath) -> BTreeSet<ModulePath> {
    let tokens = tokenize(src);
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "use" {
            let (paths, next) = use_tree(&tokens, i + 1, &[]);
            for p in paths {
                if let Some(abs) = absolute(&p, module) {
                    out.insert(abs);
                }
            }
            i = next;
            continue;
        }
        if matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && (i == 0 || tokens[i - 1] != "::")
        {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|t| t == "::")
                && tokens.get(j + 1).is_some_and(|t| is_ident(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            if let Some(abs) = absolute(&path, module) {
                out.insert(abs);
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && t.bytes().all(is_ident_byte)
}

fn tokenize(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_ident_byte(c) {
            let start = i;
            while i < b.len() && is_ident_byte(b[i]) {
                i += 1;
            }
            out.push(src[start..i].to_string());
        } else if c == b':' && b.get(i + 1) == Some(&b':') {
            out.push("::".into());
            i += 2;
        } else if c.is_ascii_whitespace() || !c.is_ascii() {
            i += 1;
        } else {
            out.push((c as char).to_string());
            i += 1;
        }
    }
    out
}

/// Expands one `use` tree starting at `tokens[i]`; returns the paths and the index after it.
fn use_tree(tokens: &[String], mut i: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix.to_vec();
    let mut out = Vec::new();
    if tokens.get(i).is_some_and(|t| t == "::") {
        i += 1;
    }
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                loop {
                    match tokens.get(i).map(String::as_str) {
                        Some("}") => {
                            i += 1;
                            break;
                        }
                        Some(",") => i += 1,
                        None => return (out, i),
                        _ => {
                            let (inner, next) = use_tree(tokens, i, &path);
                            out.extend(inner);
                            if next == i {
                                i += 1;
                            } else {
                                i = next;
                            }
                        }
                    }
                }
                return (out, i);
            }
            Some("*") => {
                out.push(path);
                return (out, i + 1);
            }
            Some(t) if is_ident(t) => {
                path.push(t.to_string());
                i += 1;
                if tokens.get(i).is_some_and(|t| t == "::") {
                    i += 1;
                    continue;
                }
                if tokens.get(i).is_some_and(|t| t == "as") {
                    i += 2;
                }
                out.push(path);
                return (out, i);
            }
            _ => {
                if !path.is_empty() && path.len() > prefix.len() {
                    out.push(path);
                }
                return (out, i);
            }
        }
    }
}

/// `crate::a::b` → `[a, b]`; `super::c` from `[x, y]` → `[x, c]`; paths into other crates → None.
fn absolute(path: &[String], module: &ModulePath) -> Option<ModulePath> {
    let mut base: ModulePath;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            base = module.clone();
            rest = &path[1..];
        }
        Some("super") => {
            base = module.clone();
            while rest.first().is_some_and(|t| t == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().filter(|t| *t != "self").cloned());
    Some(base)
}

/// The longest prefix of `path` that is a module of the crate.
fn module_prefix(path: &ModulePath, modules: &BTreeSet<ModulePath>) -> ModulePath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// Edges between sibling modules: a reference from inside `a::x::…` to inside `a::y::…` is an edge
/// `x → y` among the children of `a`. References to an ancestor, or from a parent into its own
/// children, are not edges (a parent owns its children).
pub fn sibling_edges(
    crate_modules: &CrateModules,
) -> BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> {
    let mut graphs: BTreeMap<ModulePath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (from, refs) in &crate_modules.references {
        for to in refs {
            let to = module_prefix(to, &crate_modules.modules);
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                graphs
                    .entry(from[..common].to_vec())
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .insert(to[common].clone());
            }
        }
    }
    graphs
}

/// The cycles of a directed graph, each as its members in a strongly connected component.
pub fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components; components of two or more are cycles.
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low[v];
                s.low.insert(v, lv.min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            visit(&mut state, v);
        }
    }
    state.out
}

/// Every module cycle of the crate at `src`, as `parent: a -> b -> a` lines with the edges that
/// make it.
pub fn module_cycles(src: &Path) -> std::io::Result<Vec<String>> {
    let crate_modules = read_crate(src)?;
    let mut out = Vec::new();
    for (parent, graph) in sibling_edges(&crate_modules) {
        for cycle in cycles(&graph) {
            let members: BTreeSet<&String> = cycle.iter().collect();
            let edges: Vec<String> = cycle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| members.contains(to))
                        .map(move |to| format!("{from} -> {to}"))
                })
                .collect();
            let at = if parent.is_empty() {
                "crate".to_string()
            } else {
                format!("crate::{}", parent.join("::"))
            };
            out.push(format!("{at}: {}", edges.join(", ")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> ModulePath {
        s.split("::")
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn use_trees_expand_to_absolute_paths() {
        let src = "use crate::{a::X, b::{c::Y, Z as W}};\nuse super::d::*;\nfn f() { crate::e::g(); self::h::i(); }";
        let got = referenced_paths(src, &p("m::n"));
        let want: BTreeSet<ModulePath> = ["a::X", "b::c::Y", "b::Z", "m::d", "e::g", "m::n::h::i"]
            .iter()
            .map(|s| p(s))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn comments_strings_and_inline_tests_are_not_references() {
        let src = r##"
            // use crate::a;
            /* crate::b::x */
            const S: &str = "crate::c::y";
            const R: &str = r#"crate::d::z"#;
            fn f<'a>(x: &'a str) -> char { 'c' }
            #[cfg(test)]
            mod tests { use crate::e::Q; }
            use crate::f::G;
        "##;
        let got = referenced_paths(&without_tests(&strip_comments_and_strings(src)), &p(""));
        assert_eq!(got, BTreeSet::from([p("f::G")]));
    }

    #[test]
    fn a_cycle_between_siblings_is_found_and_a_parent_child_link_is_not() {
        let mut m = CrateModules::default();
        for s in ["", "a", "b", "c", "c::d", "c::e"] {
            m.modules.insert(p(s));
        }
        let refs = [
            ("a", "b::Thing"),
            ("b", "a::Other"),
            ("c", "c::d::X"),
            ("c::d", "c::Y"),
            ("c::d", "c::e::Z"),
        ];
        for (from, to) in refs {
            m.references.entry(p(from)).or_default().insert(p(to));
        }
        let graphs = sibling_edges(&m);
        assert_eq!(
            cycles(&graphs[&p("")]),
            vec![vec!["a".to_string(), "b".into()]]
        );
        assert!(cycles(&graphs[&p("c")]).is_empty());
    }
}
