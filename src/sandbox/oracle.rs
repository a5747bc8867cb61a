//! The independent oracle for lnk's BPF compiler ([`crate::bpf`]): every policy lnk can install
//! is compiled by seccompiler as well, and the two programs must give the same answer for every
//! system call number and every tested argument value.
//!
//! lnk's own tests check its compiler against the policy evaluated directly
//! ([`crate::bpf::Policy::decide`]), which shares the compiler's reading of the policy. A
//! reviewer should not have to trust that reading: seccompiler is a separate implementation
//! (rust-vmm's, used by Firecracker) that knows nothing of lnk's search tree, its jump
//! arithmetic or its low-word loads. It takes one filter per answer, so a policy becomes one
//! seccompiler filter for each errno it answers, combined as the kernel combines filters (the
//! most restrictive answer wins).
//!
//! Its vocabulary is smaller than lnk's: no `(arg & mask) != value`. That check is written as
//! the other values the masked bits can take, each a `MaskedEq`; and a rule (all of its checks)
//! becomes one seccompiler rule per combination of those alternatives.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use crate::bpf::tests::{argument_values, rule_cases, run};
use crate::bpf::{AUDIT_ARCH, Answer, Check, Entry, Instruction, Policy};

#[cfg(target_arch = "x86_64")]
const TARGET: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const TARGET: TargetArch = TargetArch::aarch64;
#[cfg(target_arch = "riscv64")]
const TARGET: TargetArch = TargetArch::riscv64;

/// One check as seccompiler's conditions, any one of which means the check holds.
fn alternatives(check: &Check) -> Vec<SeccompCondition> {
    let condition = |op, value: u32| {
        SeccompCondition::new(check.arg, SeccompCmpArgLen::Dword, op, u64::from(value))
            .expect("a valid condition")
    };
    match (check.equal, check.mask) {
        (true, u32::MAX) => vec![condition(SeccompCmpOp::Eq, check.value)],
        (true, mask) => vec![condition(SeccompCmpOp::MaskedEq(u64::from(mask)), check.value)],
        (false, u32::MAX) => vec![condition(SeccompCmpOp::Ne, check.value)],
        (false, mask) => {
            assert_eq!(check.value & !mask, 0, "a value outside its mask: {check:?}");
            assert!(mask.count_ones() <= 8, "too many masked bits to list: {check:?}");
            submasks(mask)
                .filter(|v| *v != check.value)
                .map(|v| condition(SeccompCmpOp::MaskedEq(u64::from(mask)), v))
                .collect()
        }
    }
}

/// Every value made of some of `mask`'s bits.
fn submasks(mask: u32) -> impl Iterator<Item = u32> {
    let bits: Vec<u32> = (0..32).map(|b| 1u32 << b).filter(|b| mask & b != 0).collect();
    (0u32..1 << bits.len())
        .map(move |pick| bits.iter().enumerate().filter(|(i, _)| pick & (1 << i) != 0).map(|(_, b)| b).sum())
}

/// One of lnk's rules (all its checks hold) as seccompiler rules (any one holds).
fn seccompiler_rules(rule: &[Check]) -> Vec<SeccompRule> {
    let mut combinations: Vec<Vec<SeccompCondition>> = vec![Vec::new()];
    for check in rule {
        let choices = alternatives(check);
        combinations = combinations
            .iter()
            .flat_map(|done| {
                choices.iter().map(move |c| {
                    let mut next = done.clone();
                    next.push(c.clone());
                    next
                })
            })
            .collect();
    }
    combinations.into_iter().map(|c| SeccompRule::new(c).expect("a rule with conditions")).collect()
}

/// The policy as seccompiler programs, one per answer.
fn seccompiler_programs(policy: &Policy) -> Vec<Vec<Instruction>> {
    let answers_of = |e: &Entry| match e {
        Entry::Always(a) => vec![*a],
        Entry::When { rules, otherwise } => rules.iter().map(|r| r.answer).chain([*otherwise]).collect(),
    };
    // lnk takes the first rule that holds; the kernel, of several filters, the most restrictive
    // answer. The two agree only if an entry's rules go from the most restrictive down.
    for entry in policy.entries().values() {
        if let Entry::When { rules, .. } = entry {
            let ranks: Vec<i32> = rules.iter().map(|r| restrictiveness(r.answer)).collect();
            assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "rules out of the kernel's order: {entry:?}");
        }
    }
    let mut answers: Vec<Answer> = policy.entries().values().flat_map(answers_of).collect();
    answers.sort_by_key(|a| format!("{a:?}"));
    answers.dedup();
    let mut programs = Vec::new();
    for answer in answers {
        let action = match answer {
            Answer::Errno(e) => SeccompAction::Errno(u32::from(e)),
            // seccompiler has no user notification: TRACE stands for it, being likewise less
            // restrictive than an errno and more than allowing (see `as_compared`).
            Answer::Notify => SeccompAction::Trace(0),
            Answer::KillProcess => SeccompAction::KillProcess,
            Answer::Allow => continue,
        };
        // As many filters for the answer as seccompiler's linear programs need to stay within
        // the kernel's 4096 instructions: the kernel runs them all, so the answer is the same.
        let mut group: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for (nr, entry) in policy.entries() {
            let rules = match entry {
                Entry::Always(a) if *a == answer => Vec::new(),
                // An otherwise-answer holds for every call of the number: the filters of the
                // rules' answers, more restrictive, win where a rule holds, as the kernel
                // combines filters.
                Entry::When { rules, otherwise } if *otherwise == answer => {
                    for rule in rules {
                        assert!(
                            restrictiveness(rule.answer) < restrictiveness(*otherwise),
                            "{:?} must win over {otherwise:?}",
                            rule.answer
                        );
                    }
                    Vec::new()
                }
                Entry::When { rules, .. } if rules.iter().any(|r| r.answer == answer) => {
                    let mine = rules.iter().filter(|r| r.answer == answer);
                    assert!(
                        rules.iter().all(|r| !r.checks.is_empty()),
                        "an empty rule always holds: write it as Always"
                    );
                    mine.flat_map(|r| seccompiler_rules(&r.checks)).collect()
                }
                _ => continue,
            };
            let mut with = group.clone();
            with.insert(i64::from(*nr), rules.clone());
            if !group.is_empty() && compile(with.clone(), action.clone()).is_none() {
                programs
                    .push(compile(std::mem::take(&mut group), action.clone()).expect("it compiled before"));
                group.insert(i64::from(*nr), rules);
            } else {
                group = with;
            }
        }
        if !group.is_empty() {
            programs.push(compile(group, action).expect("one call's rules fit in a filter"));
        }
    }
    programs
}

/// A return value's action as the kernel ranks filters' answers (lower wins).
fn restrictiveness(answer: Answer) -> i32 {
    let ret = match answer {
        Answer::Allow => 0x7fff_0000,
        Answer::Errno(e) => 0x0005_0000 | u32::from(e),
        Answer::Notify => crate::sys::SECCOMP_RET_USER_NOTIF,
        Answer::KillProcess => crate::sys::SECCOMP_RET_KILL_PROCESS,
    };
    (ret & 0xffff_0000) as i32
}

/// lnk's return value as seccompiler's stand-in gives it: user notification as TRACE.
fn as_compared(ret: u32) -> u32 {
    if ret == crate::sys::SECCOMP_RET_USER_NOTIF { 0x7ff0_0000 } else { ret }
}

/// seccompiler's program for `rules`, or `None` when it is too long for the kernel.
fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>, action: SeccompAction) -> Option<Vec<Instruction>> {
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, action, TARGET).expect("seccompiler accepts it");
    match BpfProgram::try_from(filter) {
        Ok(program) => {
            Some(program.iter().map(|i| Instruction { code: i.code, jt: i.jt, jf: i.jf, k: i.k }).collect())
        }
        Err(seccompiler::BackendError::FilterTooLarge(_)) => None,
        Err(e) => panic!("seccompiler cannot compile it: {e}"),
    }
}

/// The answer of several filters, as the kernel takes it: the most restrictive (the lowest
/// action, compared as a signed number, so that killing wins over an errno over allowing).
fn combined(programs: &[Vec<Instruction>], arch: u32, nr: u32, args: &[u64; 6]) -> u32 {
    let answers = programs.iter().map(|p| run(p, arch, nr, args));
    answers.min_by_key(|ret| (ret & 0xffff_0000) as i32).unwrap_or(0x7fff_0000)
}

/// Checks lnk's program for `policy` against seccompiler's, call by call.
fn assert_agrees_with_seccompiler(policy: &Policy) {
    let ours = policy.compile();
    let theirs = seccompiler_programs(policy);
    let values = argument_values(policy);
    let mut cases: Vec<(u32, [u64; 6])> = rule_cases(policy);
    let last = policy.entries().keys().next_back().map_or(0, |n| n + 2);
    for nr in 0..1100u32.max(last) {
        // Every tested value in every slot for a listed call; a few vectors for the others
        // (which no argument can change in either program, but a jump gone wrong could).
        let listed = policy.entries().contains_key(&nr);
        let tried = if listed { values.len() } else { 3 };
        for (n, v) in values.iter().enumerate().take(tried) {
            for slot in 0..6 {
                let mut args = [0u64; 6];
                for (j, arg) in args.iter_mut().enumerate() {
                    *arg = values[(n + j * 7) % values.len()];
                }
                args[slot] = *v;
                cases.push((nr, args));
            }
        }
    }
    for (nr, args) in cases {
        let mine = as_compared(run(&ours, AUDIT_ARCH, nr, &args));
        let other = combined(&theirs, AUDIT_ARCH, nr, &args);
        assert_eq!(mine, other, "nr {nr} args {args:x?}: lnk answers {mine:#x}, seccompiler {other:#x}");
    }
    // Another architecture's table: both kill.
    for nr in [0, 59, 1000] {
        let other_arch = 0x4000_0003;
        assert_eq!(run(&ours, other_arch, nr, &[0; 6]), crate::sys::SECCOMP_RET_KILL_PROCESS);
        assert_eq!(combined(&theirs, other_arch, nr, &[0; 6]), crate::sys::SECCOMP_RET_KILL_PROCESS);
    }
}

#[test]
fn every_policy_lnk_installs_gives_seccompilers_answers() {
    for policy in super::seccomp::every_policy() {
        assert_agrees_with_seccompiler(&super::seccomp::rules(policy));
    }
}

#[test]
fn the_oracle_tells_a_wrong_program_apart() {
    // A policy and the same policy with one check's value off by one: seccompiler's program for
    // the first must disagree with lnk's for the second, or the comparison proves nothing.
    let mut right = Policy::default();
    right
        .set(libc::SYS_ioctl, Entry::when(vec![vec![Check::eq(1, 0x5412)]], Answer::Errno(1), Answer::Allow));
    let mut wrong = Policy::default();
    wrong
        .set(libc::SYS_ioctl, Entry::when(vec![vec![Check::eq(1, 0x5413)]], Answer::Errno(1), Answer::Allow));
    let theirs = seccompiler_programs(&right);
    let args = [0, 0x5412, 0, 0, 0, 0];
    let nr = libc::SYS_ioctl as u32;
    assert_ne!(run(&wrong.compile(), AUDIT_ARCH, nr, &args), combined(&theirs, AUDIT_ARCH, nr, &args));
    assert_eq!(run(&right.compile(), AUDIT_ARCH, nr, &args), combined(&theirs, AUDIT_ARCH, nr, &args));
    // A masked inequality, written out as the values it allows.
    let ne = Check::masked_ne(1, 0o6000, 0);
    assert_eq!(alternatives(&ne).len(), 3);
}
