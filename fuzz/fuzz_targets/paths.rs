//! Path handling with an escape oracle: whatever the input, a path normalised beneath a root
//! stays beneath it, a file tool path lands in the files folder or its team's folder, and a
//! grant expands to an absolute path without `..`.
#![no_main]

use std::path::{Component, Path};

use libfuzzer_sys::fuzz_target;
use lnk::paths::{AgentPath, GrantPath, RelativePath, is_beneath, team_folder};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let root = Path::new("/fuzz/root");
    let home = Path::new("/fuzz/home");
    let files = Path::new("/fuzz/home/Link/Files");
    let no_dots = |p: &Path| p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));

    if let Ok(rel) = RelativePath::parse(text) {
        let p = rel.under(root);
        assert!(is_beneath(&p, root), "{text:?} -> {p:?}");
        assert!(no_dots(&p), "{text:?} -> {p:?}");
        assert_eq!(
            RelativePath::parse(&rel.to_string()).ok().as_ref().or(rel.is_root().then_some(&rel)),
            Some(&rel)
        );
    }
    if let Ok(agent) = AgentPath::parse(text) {
        let p = agent.resolve(files, home);
        assert!(no_dots(&p), "{text:?} -> {p:?}");
        match &agent {
            AgentPath::Files(_) => assert!(is_beneath(&p, files), "{text:?} -> {p:?}"),
            AgentPath::Team { team, .. } => {
                assert!(is_beneath(&p, &team_folder(home, team)), "{text:?} -> {p:?}")
            }
        }
    }
    if let Ok(grant) = GrantPath::parse(text) {
        let p = grant.expand(home);
        assert!(p.is_absolute() && no_dots(&p), "{text:?} -> {p:?}");
        if text.starts_with('~') {
            assert!(is_beneath(&p, home), "{text:?} -> {p:?}");
        }
    }
});
