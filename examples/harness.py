#!/usr/bin/env python3
"""A harness's use of lnk, end to end: the example the README points harness authors at.

    python3 examples/harness.py [LNK [LNK_LINK_RUN]]

LNK and LNK_LINK_RUN default to the `lnk` and `lnk-link-run` found on PATH. It makes an agent of its own in a scratch folder (a home with a files folder, a sandbox file,
an agent folder for records), then:

1. runs a program in the sandbox and reads the JSON report (outcome, exit code, output, what
   was enforced, what was refused and how to allow it), applies the report's `fix` to its own
   sandbox file, asks `lnk sandbox check`, and runs the program again;
2. starts a background command, waits for it to end, and reads its output;
3. holds a file session: one JSON request per line in, one answer per line out.

Every step checks what it got and exits non-zero if something is off, so CI runs this file as a
test (tests/examples.rs). Only the standard library is used.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

if any(arg in ("-h", "--help") for arg in sys.argv[1:]):
    print(__doc__)
    sys.exit(0)
LNK = sys.argv[1] if len(sys.argv) > 1 else shutil.which("lnk") or "lnk"
LNK_LINK_RUN = sys.argv[2] if len(sys.argv) > 2 else shutil.which("lnk-link-run") or "lnk-link-run"

# The harness keeps its sandbox file as data and writes it out for each call: a denial's `fix`
# ({table, key, value}) is then one append to one list. None as a table means the top level.
POLICY = {
    None: {"commands": ["sh", "python3", "echo", "cat"]},
    "files": {"read": ["~"], "write": ["~/Link/Files"]},
    "tool.run": {"timeout": 60, "output": 30000},
}


def write_policy(path, policy):
    """The sandbox file as TOML (strings, lists of strings and integers are all it needs)."""
    lines = []
    for table, keys in sorted(policy.items(), key=lambda item: item[0] is not None):
        if table is not None:
            lines.append(f"\n[{table}]")
        for key, value in keys.items():
            lines.append(f"{key} = {json.dumps(value)}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def apply_fix(policy, fix):
    """What an agent's harness does with a denial's fix: add the value to the list it names."""
    policy.setdefault(fix["table"], {}).setdefault(fix["key"], [])
    if fix["value"] not in policy[fix["table"]][fix["key"]]:
        policy[fix["table"]][fix["key"]].append(fix["value"])


def check(condition, what, detail=""):
    if not condition:
        sys.exit(f"harness example: {what} failed {detail}")
    print(f"ok: {what}")


def sandbox_run(env, policy, agent_dir, *argv):
    """`lnk sandbox run --report json` and its one JSON object. `--agent-dir` names the agent's
    records folder, which the sandbox then keeps out of every grant (a program that could read
    a record's lock could make a dead supervisor look alive)."""
    done = subprocess.run(
        [LNK, "sandbox", "run", "--report", "json", "--file", policy, "--agent-dir", agent_dir, "--", *argv],
        env=env, capture_output=True, text=True, timeout=120,
    )
    return done.returncode, json.loads(done.stdout)


def link_run(env, agent_dir, files_dir, verb, *args):
    done = subprocess.run(
        [LNK_LINK_RUN, verb, "--agent-dir", agent_dir, "--files-dir", files_dir, *args],
        env=env, capture_output=True, text=True, timeout=120,
    )
    return done


def main():
    scratch = tempfile.mkdtemp(prefix="lnk-harness-example-")
    try:
        home = os.path.join(scratch, "home")
        files_dir = os.path.join(home, "Link", "Files")
        agent_dir = os.path.join(home, "Link", "Agents", "example")
        os.makedirs(files_dir)
        os.makedirs(agent_dir)
        policy = os.path.join(scratch, "sandbox.toml")
        write_policy(policy, POLICY)
        # The helper's environment is the harness's: HOME says where `~` is; TMPDIR where each
        # call's private tmp folder lives.
        env = dict(os.environ, HOME=home, TMPDIR=scratch)

        # 1. One call.
        code, report = sandbox_run(env, policy, agent_dir, "sh", "-c", "echo hello > ~/Link/Files/hello.txt; cat ~/Link/Files/hello.txt")
        check(code == 0 and report["outcome"] == "exited", "a call exits 0", report.get("error"))
        check(report["stdout"]["text"] == "hello\n", "its output comes back", report["stdout"])
        print(f"   mode: {report['enforced']['mode']}, lacking: {report['enforced']['lacks']}")
        code, report = sandbox_run(env, policy, agent_dir, "seq", "3")
        check(code == 126 and report["outcome"] == "refused", "an unlisted program is refused")
        fix = report["denials"][0]["fix"]
        check(fix == {"table": None, "key": "commands", "value": "seq", "words": 'add "seq" to commands'},
              "the report says how to allow it", report["denials"])
        apply_fix(POLICY, fix)
        write_policy(policy, POLICY)
        checked = subprocess.run([LNK, "sandbox", "check", "--json", "--agent-dir", agent_dir, policy], env=env, capture_output=True, text=True)
        check(checked.returncode == 0 and json.loads(checked.stdout)["outcome"] == "ok", "the fixed file passes check", checked.stdout + checked.stderr)
        code, report = sandbox_run(env, policy, agent_dir, "seq", "3")
        check(code == 0 and report["stdout"]["text"] == "1\n2\n3\n", "and the program then runs", report)

        # 2. A background command.
        started = link_run(env, agent_dir, files_dir, "start", "--file", policy, "--", "sh", "-c", "echo from the background")
        check(started.returncode == 0, "a background command starts", started.stderr)
        run_id = started.stdout.strip().splitlines()[-1]
        if run_id.startswith("{"):
            run_id = json.loads(run_id)["id"]
        state = None
        for _ in range(300):
            listed = json.loads(link_run(env, agent_dir, files_dir, "list", "--json").stdout)
            records = listed if isinstance(listed, list) else listed.get("records", [])
            state = next((r["state"] for r in records if r["id"] == run_id), None)
            if state not in (None, "starting", "running"):
                break
            time.sleep(0.05)
        check(state == "exited", "it ends, and `list` says so", state)
        read = link_run(env, agent_dir, files_dir, "read", run_id)
        check("from the background" in read.stdout, "its output is read back", read.stdout)

        # 3. A file session.
        session = subprocess.Popen(
            [LNK, "sandbox", "run", "--file", policy, "--tool", "file", "--agent-dir", agent_dir, "--", "lnk", "file", "--files-dir", files_dir],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

        def call(request):
            session.stdin.write(json.dumps(request) + "\n")
            session.stdin.flush()
            return json.loads(session.stdout.readline())

        answer = call({"id": 1, "op": "write", "path": "notes/todo.md", "content": "one\ntwo\n"})
        check("ok" in answer, "the session writes a file", answer)
        answer = call({"id": 2, "op": "edit", "path": "notes/todo.md", "old": "two", "new": "2"})
        check("ok" in answer, "and edits it", answer)
        answer = call({"id": 3, "op": "read", "path": "notes/todo.md"})
        check(answer["ok"]["text"] == "one\n2\n", "and reads it back", answer)
        answer = call({"id": 4, "op": "read", "path": "../../.bashrc"})
        check("error" in answer, "a path out of the files folder is an answer, not an escape", answer)
        session.stdin.close()
        check(session.wait(timeout=30) == 0, "the session ends when its input does")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("harness example: all ok")


if __name__ == "__main__":
    main()
