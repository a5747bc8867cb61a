//! A seccomp policy compiled to one classic BPF program, searched in logarithmic time.
//!
//! Why not a general filter library: seccompiler (used before) emits one linear chain per
//! filter, so every system call the program makes, allowed ones included, walked past a check
//! for each of the ~150 listed calls (about 670 instructions), and each answer (`EPERM`,
//! `ENOSYS`, the x32 kill) needed a filter of its own, each verified and JIT-compiled by the
//! kernel at every launch. This compiler knows only what lnk's policy needs and emits:
//!
//! ```text
//!   A = arch;  if A != this architecture: kill the process   (no other syscall table)
//!   A = nr;    if A & x32 bit (x86_64): kill the process      (no x32 table)
//!   binary search over the numbers' ranges, ~8 comparisons, to one leaf:
//!     ret ALLOW | ret ERRNO(e) | checks on the low 32 bits of arguments, then ret
//! ```
//!
//! Numbers that no entry names are allowed (the program's filter: a list of what is refused)
//! or refused (a helper thread's: a list of what is allowed, [`Policy::allowing_only`]), so
//! adjacent numbers with the same answer are one range. A conditional entry answers with the answer of the first of its rules that holds, each
//! rule being a conjunction of `(args[i] & mask) == value` or `!=` tests, and with its
//! `otherwise` when none does. Its rules are ordered as the kernel ranks answers (an errno
//! before a hold, a hold before allowing), so the first that holds is also the most restrictive
//! that does: the order a reader need not trust, since the oracle combines one filter per
//! answer as the kernel does (see `super::oracle`).
//!
//! Only the low 32 bits of an argument are compared: every argument lnk's policy tests is an
//! `int` or is truncated to 32 bits by the kernel (`clone`'s flags, `ioctl`'s command), and a
//! 64-bit compare on those would be bypassed by setting high bits (CVE-2019-10063).
//!
//! The program is checked by the test below against [`Policy::decide`], the same policy
//! evaluated directly, for every system call number in range and arguments around each tested
//! value, by a small BPF interpreter.

use std::collections::BTreeMap;

/// What the filter answers for a system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Allow,
    /// Fail the call with this errno, without running it.
    Errno(u16),
    /// Hold the call and tell the listener (seccomp user notification), which answers for it.
    Notify,
    KillProcess,
}

impl Answer {
    fn ret_value(self) -> u32 {
        match self {
            Answer::Allow => SECCOMP_RET_ALLOW,
            Answer::Errno(e) => SECCOMP_RET_ERRNO | u32::from(e),
            Answer::Notify => crate::sys::SECCOMP_RET_USER_NOTIF,
            Answer::KillProcess => crate::sys::SECCOMP_RET_KILL_PROCESS,
        }
    }
}

/// One test on an argument's low 32 bits: `(arg & mask) == value` (or `!=` with `equal` false).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    pub arg: u8,
    pub mask: u32,
    pub equal: bool,
    pub value: u32,
}

impl Check {
    /// `(args[arg] & mask) == value`.
    pub fn masked_eq(arg: u8, mask: u32, value: u32) -> Check {
        Check { arg, mask, equal: true, value }
    }
    /// `(args[arg] & mask) != value`.
    pub fn masked_ne(arg: u8, mask: u32, value: u32) -> Check {
        Check { arg, mask, equal: false, value }
    }
    pub fn eq(arg: u8, value: u32) -> Check {
        Check { arg, mask: u32::MAX, equal: true, value }
    }
    pub fn ne(arg: u8, value: u32) -> Check {
        Check { arg, mask: u32::MAX, equal: false, value }
    }

    fn holds(&self, args: &[u64; 6]) -> bool {
        let low = args[usize::from(self.arg)] as u32;
        ((low & self.mask) == self.value) == self.equal
    }
}

/// The answer for one system call number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Always(Answer),
    /// The answer of the first rule that holds (a rule holds when all its checks do), else
    /// `otherwise` (`Allow`, or `Notify` for a call refused outright under some arguments and
    /// held for the listener under the rest).
    When {
        rules: Vec<Rule>,
        otherwise: Answer,
    },
}

/// A conjunction of checks, and the answer when they all hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub checks: Vec<Check>,
    pub answer: Answer,
}

impl Rule {
    fn holds(&self, args: &[u64; 6]) -> bool {
        self.checks.iter().all(|c| c.holds(args))
    }
}

impl Entry {
    /// `answer` when any of `rules` holds, else `otherwise`.
    pub fn when(rules: Vec<Vec<Check>>, answer: Answer, otherwise: Answer) -> Entry {
        Entry::When { rules: rules.into_iter().map(|checks| Rule { checks, answer }).collect(), otherwise }
    }

    /// The answer of the first of `cases` (rules, and the answer when one holds) that holds,
    /// else `otherwise`. The cases' answers go from the most restrictive down, as the kernel
    /// ranks them.
    pub fn cases(cases: Vec<(Vec<Vec<Check>>, Answer)>, otherwise: Answer) -> Entry {
        let rules = cases
            .into_iter()
            .flat_map(|(rules, answer)| rules.into_iter().map(move |checks| Rule { checks, answer }))
            .collect();
        Entry::When { rules, otherwise }
    }
}

/// A whole filter: the architecture it is for, an entry per listed system call, and the answer
/// for every number not listed.
#[derive(Debug, Clone)]
pub struct Policy {
    entries: BTreeMap<u32, Entry>,
    unlisted: Answer,
}

impl Default for Policy {
    /// A policy of what is refused: numbers not listed are allowed.
    fn default() -> Policy {
        Policy { entries: BTreeMap::new(), unlisted: Answer::Allow }
    }
}

impl Policy {
    /// A policy of what is allowed: numbers not listed get `refusal`.
    pub fn allowing_only(refusal: Answer) -> Policy {
        Policy { entries: BTreeMap::new(), unlisted: refusal }
    }

    /// Sets `nr`'s entry, replacing any earlier one.
    pub fn set(&mut self, nr: libc::c_long, entry: Entry) {
        let nr = u32::try_from(nr).expect("system call numbers are small and positive");
        self.entries.insert(nr, entry);
    }

    /// The answer for a call, from the policy itself: what the compiled program must agree with.
    pub fn decide(&self, arch: u32, nr: u32, args: &[u64; 6]) -> Answer {
        if arch != AUDIT_ARCH || (cfg!(target_arch = "x86_64") && nr & X32_SYSCALL_BIT != 0) {
            return Answer::KillProcess;
        }
        match self.entries.get(&nr) {
            None => self.unlisted,
            Some(Entry::Always(answer)) => *answer,
            Some(Entry::When { rules, otherwise }) => {
                rules.iter().find(|rule| rule.holds(args)).map_or(*otherwise, |rule| rule.answer)
            }
        }
    }

    /// Each listed number's entry, for the tests' oracle (see `super::oracle`).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> &BTreeMap<u32, Entry> {
        &self.entries
    }

    /// The program, ready for `seccomp(SECCOMP_SET_MODE_FILTER)`.
    pub fn compile(&self) -> Vec<Instruction> {
        let mut code = vec![
            Instruction::load(SECCOMP_DATA_ARCH),
            Instruction::jump(BPF_JEQ, AUDIT_ARCH, 1, 0),
            Instruction::ret(crate::sys::SECCOMP_RET_KILL_PROCESS),
            Instruction::load(SECCOMP_DATA_NR),
        ];
        if cfg!(target_arch = "x86_64") {
            code.push(Instruction::jump(BPF_JSET, X32_SYSCALL_BIT, 0, 1));
            code.push(Instruction::ret(crate::sys::SECCOMP_RET_KILL_PROCESS));
        }
        search(&self.ranges(), self.unlisted, &mut code);
        code
    }

    /// The number line cut into ranges `[start, next start)` with one entry each (`None`:
    /// not listed). Adjacent numbers with the same unconditional answer share a range.
    fn ranges(&self) -> Vec<(u32, Option<&Entry>)> {
        fn push<'a>(ranges: &mut Vec<(u32, Option<&'a Entry>)>, start: u32, entry: Option<&'a Entry>) {
            let merges = match (ranges.last(), entry) {
                (Some((_, Some(Entry::Always(a)))), Some(Entry::Always(b))) => a == b,
                _ => false,
            };
            if !merges {
                ranges.push((start, entry));
            }
        }
        let mut ranges = Vec::new();
        // The number right after the last entry: where a gap of allowed numbers would start.
        let mut after_last: u64 = 0;
        for (nr, entry) in &self.entries {
            if u64::from(*nr) > after_last {
                push(&mut ranges, after_last as u32, None);
            }
            push(&mut ranges, *nr, Some(entry));
            after_last = u64::from(*nr) + 1;
        }
        if after_last <= u64::from(u32::MAX) {
            push(&mut ranges, after_last as u32, None);
        }
        ranges
    }
}

/// Emits a binary search over `ranges` (sorted, the first starting at 0) with `A` holding the
/// system call number. Each split is `if A >= start(right half) goto right`, with the left
/// half's code right after it. A conditional jump reaches only 255 instructions ahead, so when
/// the left half is longer (near the root only) the split jumps over a long jump (`ja`) instead.
/// Every instruction saved here is one the kernel verifies and JIT-compiles at every launch:
/// installing the filter was ~0.15 ms of a launch.
/// The split is emitted first and its offset filled in once the left half's code is there (in
/// place: a copy of each half's code at each level was a third of the compile's time).
fn search(ranges: &[(u32, Option<&Entry>)], unlisted: Answer, code: &mut Vec<Instruction>) {
    if let [(_, entry)] = ranges {
        leaf(*entry, unlisted, code);
        return;
    }
    let (left, right) = ranges.split_at(ranges.len() / 2);
    let split = code.len();
    code.push(Instruction::jump(BPF_JGE, right[0].0, 0, 0));
    search(left, unlisted, code);
    let left_len = code.len() - split - 1;
    match u8::try_from(left_len) {
        Ok(skip) => code[split].jt = skip,
        Err(_) => {
            // The left half's code moves one on: its jumps are relative and stay within it.
            code[split].jf = 1;
            let over = u32::try_from(left_len).expect("a filter is small");
            code.insert(split + 1, Instruction { code: BPF_JMP | BPF_JA, jt: 0, jf: 0, k: over });
        }
    }
    search(right, unlisted, code);
}

/// The code for one range's answer. Checks load arguments into `A`, which is fine: nothing
/// after a leaf looks at the number again.
fn leaf(entry: Option<&Entry>, unlisted: Answer, code: &mut Vec<Instruction>) {
    let (rules, otherwise) = match entry {
        None => return code.push(Instruction::ret(unlisted.ret_value())),
        Some(Entry::Always(answer)) => return code.push(Instruction::ret(answer.ret_value())),
        Some(Entry::When { rules, otherwise }) => (rules, otherwise),
    };
    for Rule { checks, answer } in rules {
        // A rule's checks all hold or it fails, in any order: those on one argument go together,
        // the whole-word compares first, so one load of the argument serves them all; a masked
        // compare loads and ANDs (which changes `A`), so it comes last of its argument's.
        let mut rule: Vec<&Check> = checks.iter().collect();
        rule.sort_by_key(|c| (c.arg, c.mask != u32::MAX));
        // Each check is a load (unless `A` holds its argument already), an optional AND and a
        // compare: a failed compare skips the rest of the rule and its return, to the next rule.
        let mut loaded: Option<u8> = None;
        let mut plan: Vec<(bool, &Check)> = Vec::with_capacity(rule.len());
        for check in rule {
            let load = loaded != Some(check.arg);
            loaded = if check.mask == u32::MAX { Some(check.arg) } else { None };
            plan.push((load, check));
        }
        let size = |(load, c): &(bool, &Check)| 1 + usize::from(*load) + usize::from(c.mask != u32::MAX);
        let mut left: usize = plan.iter().map(size).sum::<usize>() + 1;
        for step in &plan {
            let (load, check) = step;
            if *load {
                code.push(Instruction::load(arg_low_word(check.arg)));
            }
            if check.mask != u32::MAX {
                code.push(Instruction { code: BPF_ALU | BPF_AND | BPF_K, jt: 0, jf: 0, k: check.mask });
            }
            left -= size(step);
            let skip = u8::try_from(left).expect("a rule is a few checks");
            code.push(match check.equal {
                true => Instruction::jump(BPF_JEQ, check.value, 0, skip),
                false => Instruction::jump(BPF_JEQ, check.value, skip, 0),
            });
        }
        code.push(Instruction::ret(answer.ret_value()));
    }
    code.push(Instruction::ret(otherwise.ret_value()));
}

/// The offset of argument `i`'s low 32 bits in `struct seccomp_data`.
fn arg_low_word(i: u8) -> u32 {
    let start = 16 + 8 * u32::from(i);
    if cfg!(target_endian = "little") { start } else { start + 4 }
}

/// One classic BPF instruction: the kernel's `struct sock_filter`, defined beside the call that
/// installs a program of them.
pub use crate::sys::Instruction;

impl Instruction {
    fn load(offset: u32) -> Instruction {
        Instruction { code: BPF_LD | BPF_W | BPF_ABS, jt: 0, jf: 0, k: offset }
    }
    fn jump(op: u16, k: u32, jt: u8, jf: u8) -> Instruction {
        Instruction { code: BPF_JMP | op | BPF_K, jt, jf, k }
    }
    fn ret(k: u32) -> Instruction {
        Instruction { code: BPF_RET | BPF_K, jt: 0, jf: 0, k }
    }
}

const BPF_LD: u16 = 0x00;
const BPF_ALU: u16 = 0x04;
const BPF_JMP: u16 = 0x05;
const BPF_RET: u16 = 0x06;
const BPF_W: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_AND: u16 = 0x50;
const BPF_JA: u16 = 0x00;
const BPF_JEQ: u16 = 0x10;
#[cfg(test)]
const BPF_JGT: u16 = 0x20;
const BPF_JGE: u16 = 0x30;
const BPF_JSET: u16 = 0x40;
const BPF_K: u16 = 0x00;

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

pub use crate::sys::AUDIT_ARCH;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs `code` on one `struct seccomp_data` as the kernel would: what this module emits
    /// (loads, AND, forward jumps, returns), and a panic on anything else or a jump out of range.
    pub(crate) fn run(code: &[Instruction], arch: u32, nr: u32, args: &[u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = code[pc];
            pc += 1;
            match i.code {
                c if c == BPF_LD | BPF_W | BPF_ABS => {
                    let k = i.k as usize;
                    a = u32::from_ne_bytes(data[k..k + 4].try_into().unwrap());
                }
                c if c == BPF_ALU | BPF_AND | BPF_K => a &= i.k,
                c if c == BPF_JMP | BPF_JA => pc += i.k as usize,
                c if c & 0x07 == BPF_JMP => {
                    let taken = match c & 0xf0 {
                        BPF_JEQ => a == i.k,
                        BPF_JGE => a >= i.k,
                        // Not emitted by lnk's compiler; seccompiler's (the oracle) uses it.
                        BPF_JGT => a > i.k,
                        BPF_JSET => a & i.k != 0,
                        other => panic!("unexpected jump {other:#x}"),
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                c if c == BPF_RET | BPF_K => return i.k,
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    /// Compiles `policy` and checks the program against [`Policy::decide`] for every number up to
    /// 1100 (and some far ones), with arguments at and around each value a check tests.
    pub(crate) fn assert_compiles_faithfully(policy: &Policy) {
        let code = policy.compile();
        assert!(code.len() < 4096, "BPF_MAXINSNS");
        let values = argument_values(policy);
        let cases = rule_cases(policy);
        assert!(
            policy.entries.values().all(|e| !matches!(e, Entry::When { rules, .. } if !rules.is_empty()))
                || !cases.is_empty(),
            "every conditional entry has a case that meets a rule"
        );
        for (nr, args) in cases {
            let want = policy.decide(AUDIT_ARCH, nr, &args).ret_value();
            assert_eq!(run(&code, AUDIT_ARCH, nr, &args), want, "rule case: nr {nr} args {args:x?}");
        }
        let last = policy.entries.keys().next_back().map_or(0, |n| n + 2);
        let numbers = (0..1100u32.max(last)).chain([X32_SYSCALL_BIT, X32_SYSCALL_BIT | 1, u32::MAX]);
        for nr in numbers {
            for arch in [AUDIT_ARCH, 0x4000_0003] {
                for (n, v) in values.iter().enumerate() {
                    // Each value in every argument slot, the others cycling through the values.
                    for slot in 0..6 {
                        let mut args = [0u64; 6];
                        for (j, arg) in args.iter_mut().enumerate() {
                            *arg = values[(n + j * 7) % values.len()];
                        }
                        args[slot] = *v;
                        let want = policy.decide(arch, nr, &args).ret_value();
                        assert_eq!(
                            run(&code, arch, nr, &args),
                            want,
                            "nr {nr} arch {arch:#x} args {args:x?}"
                        );
                    }
                }
            }
        }
    }

    /// The argument values worth trying against `policy`: the edges of a word, and at and around
    /// each value a check tests (with the masked-out bits set, one bit off, one less, and high
    /// bits the kernel ignores).
    pub(crate) fn argument_values(policy: &Policy) -> Vec<u64> {
        let mut values: Vec<u64> = vec![0, 1, u64::MAX, 0xffff_ffff_0000_0000, 0x1_0000_0000];
        for entry in policy.entries.values() {
            if let Entry::When { rules, .. } = entry {
                for c in rules.iter().flat_map(|r| &r.checks) {
                    let v = u64::from(c.value);
                    values.extend([
                        v,
                        v | u64::from(!c.mask),
                        v ^ 1,
                        v.wrapping_sub(1),
                        v | 0xdead_0000_0000_0000,
                    ]);
                }
            }
        }
        values.sort_unstable();
        values.dedup();
        values
    }

    /// Argument vectors that make each rule of each entry hold (every check at once, which the
    /// sweep above seldom meets for a rule over several arguments), each argument chosen to
    /// break as many of the entry's other rules as it can (so that this rule alone holds:
    /// answers alike would hide a rule that never matches), and the same vector with each of
    /// the rule's checks broken in turn. Panics if some rule is never the only one to hold.
    pub(crate) fn rule_cases(policy: &Policy) -> Vec<(u32, [u64; 6])> {
        let mut cases = Vec::new();
        for (nr, entry) in &policy.entries {
            let Entry::When { rules, .. } = entry else { continue };
            let rules: Vec<&Vec<Check>> = rules.iter().map(|r| &r.checks).collect();
            let around =
                |c: &Check| [c.value, c.value | !c.mask, c.value ^ 1, !c.value, c.value.wrapping_add(1)];
            let mut pool = vec![0, 1, u32::MAX, 0x8000_0000];
            pool.extend(rules.iter().copied().flatten().flat_map(around));
            // Each bit of a mask alone too: `(a & (X | Y)) != 0` holds with X alone, which no
            // value around the check shows.
            let bits = |c: &Check| -> Vec<u32> {
                (0..32).map(|b| 1u32 << b).filter(|b| c.mask & b != 0 && c.mask != u32::MAX).collect()
            };
            pool.extend(rules.iter().copied().flatten().flat_map(bits));
            pool.sort_unstable();
            pool.dedup();
            for (i, rule) in rules.iter().enumerate() {
                // A rule is broken by `v` in `arg` when one of its checks there fails.
                let breaks = |r: &&Vec<Check>, arg: u8, v: u32| {
                    r.iter().any(|c| c.arg == arg && !c.holds(&one(arg, v)))
                };
                let mut all = [0u64; 6];
                for arg in 0..6u8 {
                    let allowed = pool.iter().copied().filter(|v| !breaks(rule, arg, *v));
                    let score = |v: &u32| {
                        rules.iter().enumerate().filter(|(j, r)| *j != i && breaks(r, arg, *v)).count()
                    };
                    let best = allowed.max_by_key(score).unwrap_or(0);
                    all[usize::from(arg)] = u64::from(best) | 0xdead_0000_0000_0000;
                }
                let holds = |r: &&Vec<Check>, args: &[u64; 6]| r.iter().all(|c| c.holds(args));
                let alone =
                    holds(rule, &all) && !rules.iter().enumerate().any(|(j, r)| j != i && holds(r, &all));
                assert!(alone || rule.is_empty(), "nr {nr}: no case has rule {i} alone holding: {rule:?}");
                cases.push((*nr, all));
                for check in rule.iter() {
                    for v in pool.iter().copied().filter(|v| !check.holds(&one(check.arg, *v))) {
                        let mut broken = all;
                        broken[usize::from(check.arg)] = u64::from(v);
                        cases.push((*nr, broken));
                    }
                }
            }
        }
        cases
    }

    fn one(arg: u8, v: u32) -> [u64; 6] {
        let mut args = [0u64; 6];
        args[usize::from(arg)] = u64::from(v);
        args
    }

    #[test]
    fn a_small_policy_compiles_to_what_it_says() {
        let mut p = Policy::default();
        for nr in [3, 4, 5, 9, 200] {
            p.set(nr, Entry::Always(Answer::Errno(1)));
        }
        p.set(6, Entry::Always(Answer::Errno(38)));
        p.set(
            7,
            Entry::when(
                vec![
                    vec![Check::ne(0, 2), Check::ne(0, 10)],
                    vec![Check::masked_eq(1, 0xf, 3)],
                    vec![Check::eq(2, 7), Check::eq(4, 0x1234_5678), Check::masked_ne(5, 0xff, 0)],
                ],
                Answer::Errno(1),
                Answer::Allow,
            ),
        );
        p.set(8, Entry::when(vec![], Answer::Errno(1), Answer::Allow));
        // Cases with answers of their own, the most restrictive first.
        p.set(
            10,
            Entry::cases(
                vec![
                    (vec![vec![Check::masked_eq(2, 0o300, 0o300)]], Answer::Errno(1)),
                    (
                        vec![vec![Check::masked_eq(2, 0o400000, 0o400000)], vec![Check::eq(0, 5)]],
                        Answer::Notify,
                    ),
                ],
                Answer::Allow,
            ),
        );
        assert_compiles_faithfully(&p);
        assert_compiles_faithfully(&Policy::default());
    }

    #[test]
    fn splits_at_the_edge_of_a_conditional_jumps_reach_compile_faithfully() {
        // Left halves of exactly 255 instructions (the most a conditional jump skips) and of
        // 256 (the fewest that need the long jump) both occur in this family of policies, and
        // every program answers as its policy does, for every number and for arguments that
        // meet and miss the conditional entries' check.
        let (mut short_255, mut long_256) = (false, false);
        for conditional in 0..4u32 {
            for n in 100..170u32 {
                let mut p = Policy::default();
                for i in 0..n {
                    let entry = if i < conditional {
                        Entry::when(vec![vec![Check::eq(0, 7)]], Answer::Errno(1), Answer::Allow)
                    } else {
                        Entry::Always(Answer::Errno(if i % 2 == 0 { 1 } else { 38 }))
                    };
                    p.set(libc::c_long::from(2 * i), entry);
                }
                let code = p.compile();
                short_255 |= code.iter().any(|i| i.code == BPF_JMP | BPF_JGE && i.jt == 255);
                long_256 |= code.iter().any(|i| i.code == BPF_JMP | BPF_JA && i.k == 256);
                for nr in 0..2 * n + 2 {
                    for args in [[0u64; 6], [7, 0, 0, 0, 0, 0]] {
                        let want = p.decide(AUDIT_ARCH, nr, &args).ret_value();
                        assert_eq!(run(&code, AUDIT_ARCH, nr, &args), want, "n {n} c {conditional} nr {nr}");
                    }
                }
            }
        }
        assert!(short_255 && long_256, "both edges met: 255 {short_255}, 256 {long_256}");
    }

    #[test]
    fn a_policy_too_long_for_short_jumps_compiles_faithfully() {
        // Every other number refused, with two answers: 1,200 ranges, so the halves near the
        // root are longer than a conditional jump reaches and need the long jump.
        let mut p = Policy::default();
        for nr in (0..1200).step_by(2) {
            p.set(nr, Entry::Always(Answer::Errno(if nr % 4 == 0 { 1 } else { 38 })));
        }
        let code = p.compile();
        assert!(code.iter().any(|i| i.code == BPF_JMP | BPF_JA), "the long jump is exercised");
        assert_compiles_faithfully(&p);
    }

    #[test]
    fn ranges_merge_neighbours_with_the_same_answer_only() {
        let mut p = Policy::default();
        for nr in [3, 4, 5] {
            p.set(nr, Entry::Always(Answer::Errno(1)));
        }
        p.set(6, Entry::Always(Answer::Errno(38)));
        let starts: Vec<u32> = p.ranges().iter().map(|r| r.0).collect();
        assert_eq!(starts, [0, 3, 6, 7]);
    }
}
