//! `lnk sandbox run`: ordinary developer work, started from the harness's work folder, in both
//! modes (the own world, and Landlock only on a simulated kernel), as root and as the ordinary
//! user (the suite runs twice). What needs a namespace of the call's own (its own `/tmp`,
//! `ps`, a local server) is checked in the own world only.

mod common;
use common::*;

/// Runs `script` with `sh -c` from the agent's work folder (`~/Link/Files/work`) in each mode.
fn in_each_mode(agent: &Agent, script: &str) -> Vec<(&'static str, Report)> {
    let work = agent.home.join("Link/Files/work");
    std::fs::create_dir_all(&work).unwrap();
    agent.in_each_mode_at(&work, &[], &[], &["sh", "-c", script])
}

fn tool_here(name: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_listed_compiler_runs_its_own_passes_and_nothing_more() {
    if !require(tool_here("gcc") && tool_here("g++"), "gcc and g++") {
        return;
    }
    let agent = Agent::new(
        "compilers",
        "commands = [\"sh\", \"gcc\", \"g++\", \"cc\", \"c++\"]\n[files]\nread = [\"~\"]\nwrite = [\"~/Link/Files\"]\n",
    );
    let script = r#"
printf '#include <stdio.h>\nint main(void) { puts("c ok"); return 0; }\n' > a.c
printf '#include <iostream>\nint main() { std::cout << "c++ ok" << std::endl; }\n' > b.cc
gcc -O1 -o a.out a.c && echo linked-c
cc -c a.c -o a.o && echo compiled-cc
g++ -o b.out b.cc && echo linked-c++
c++ -c b.cc -o b.o && echo compiled-c++
"#;
    for (mode, r) in in_each_mode(&agent, script) {
        for step in ["linked-c", "compiled-cc", "linked-c++", "compiled-c++"] {
            assert!(r.out().lines().any(|l| l == step), "{mode}: {step}: {}", r.raw);
        }
    }
    // The parts alone are no wider than the compiler: `as` runs because gcc may run it; a
    // program not listed (python3) is still refused.
    let r = agent.run(&[
        "sh",
        "-c",
        "as --version >/dev/null && echo as-ran; python3 -c 1 || echo python-refused",
    ]);
    assert!(r.out().contains("as-ran") && r.out().contains("python-refused"), "{}", r.raw);
    // Without a compiler listed, its parts are not executable.
    let none = Agent::new("no-compiler", "commands = [\"sh\"]\n");
    let r = none.run(&["sh", "-c", "as --version || echo refused"]);
    assert!(r.out().contains("refused") && !r.out().contains("GNU"), "{}", r.raw);
}
