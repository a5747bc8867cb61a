//! Ordinary programs work inside, in each mode: a local server beside `[internet]`, the person's
//! toolchains under `commands = ["*"]`, a memfd, the program's own processes by pid, a
//! terminal, a bound client socket, Unix sockets of the call's own (issue 30). Each also with
//! its hostile side: what the program did not make stays out of reach.
//!
//! The suite runs as root and as an ordinary user.

mod common;
use common::*;

#[test]
fn a_local_server_beside_internet_is_reached_directly_and_never_offered_as_the_hosts() {
    // With `[internet]`, the proxy variables are set; NO_PROXY names the loopback, so urllib and
    // curl reach the program's own server directly. A request for it sent to the proxy anyway
    // is refused without a fix: an entry would open the host's port of that number.
    let policy =
        "commands = [\"sh\", \"python3\", \"curl\", \"sleep\"]\n[internet]\nhosts = [\"example.org\"]\n";
    let script = r#"cd "$TMPDIR" && echo served > index.html
python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 & server=$!
i=0; while ! curl -s -o /dev/null http://127.0.0.1:8765/ && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
python3 -c "import urllib.request; print('urllib=' + urllib.request.urlopen('http://127.0.0.1:8765/', timeout=5).read().decode().strip())"
python3 -c "import urllib.request; print('urllib_name=' + urllib.request.urlopen('http://localhost:8765/', timeout=5).read().decode().strip())"
echo curl=$(curl -s --max-time 5 http://localhost:8765/)
echo proxied=$(curl -s --noproxy '' --max-time 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:8765/)
echo no_proxy=$NO_PROXY
kill $server"#;
    for mode in modes() {
        let agent = Agent::new("local-server-internet", policy);
        let r = Report::from(run(in_mode(&mut agent.command(&[], &["sh", "-c", script]), mode)));
        assert_eq!(r.code, Some(0), "{mode:?}: {}", r.raw);
        r.assert_said("urllib", "served");
        r.assert_said("urllib_name", "served");
        r.assert_said("curl", "served");
        r.assert_said("no_proxy", "localhost,127.0.0.1,::1,127.0.0.0/8");
        // Through the proxy: refused, and no entry offered for the loopback.
        r.assert_said("proxied", "403");
        let denials = r.json["denials"].as_array().cloned().unwrap_or_default();
        for d in &denials {
            assert!(
                d["fix"].is_null() || !d["fix"]["value"].as_str().unwrap_or("").starts_with("127."),
                "{mode:?}: a loopback port offered: {d}"
            );
        }
    }
}

#[test]
fn under_any_program_a_toolchain_beneath_a_read_grant_runs() {
    // rustup's `~/.cargo/bin`, `~/.local/bin`: beneath a read grant, run by path. With a list of
    // programs they stay refused (the kernel answers EACCES: Landlock's execute right).
    let setup = |agent: &Agent| {
        let cargo = agent.home.join(".cargo/bin");
        let local = agent.home.join(".local/bin");
        std::fs::create_dir_all(&cargo).unwrap();
        std::fs::create_dir_all(&local).unwrap();
        std::fs::write(cargo.join("mytool"), "#!/bin/sh\necho tool-ran\n").unwrap();
        std::fs::copy("/bin/true", local.join("mytrue")).unwrap();
        for f in [cargo.join("mytool"), local.join("mytrue")] {
            std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
    };
    let script = "~/.cargo/bin/mytool 2>/dev/null || echo tool-refused; \
                  ~/.local/bin/mytrue 2>/dev/null && echo elf-ran || echo elf-refused";
    for mode in modes() {
        let any = Agent::new("toolchain-any", "commands = [\"*\"]\n[files]\nread = [\"~\"]\n");
        setup(&any);
        let r = Report::from(run(in_mode(&mut any.command(&[], &["sh", "-c", script]), mode)));
        assert!(r.out().contains("tool-ran") && r.out().contains("elf-ran"), "{mode:?}: {}", r.raw);
        let listed = Agent::new("toolchain-listed", "commands = [\"sh\"]\n[files]\nread = [\"~\"]\n");
        setup(&listed);
        let r = Report::from(run(in_mode(&mut listed.command(&[], &["sh", "-c", script]), mode)));
        assert!(r.out().contains("tool-refused") && r.out().contains("elf-refused"), "{mode:?}: {}", r.raw);
    }
}
