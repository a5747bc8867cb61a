//! What the call's network did, for the report: connections opened upstream, refusals (each
//! alike counted, not repeated), and the refusals by the sandbox file's `[internet]` that the
//! report names as denials.
//!
//! Written by the proxy's threads and by the held calls' loopback (a refused connect or listen
//! of the Landlock-only mode), so it lies below both. It trusts nothing it is given: each entry
//! is bounded in number, and what it says is words the helper made.

use std::sync::Mutex;

/// The most refusals the report names one by one; past it they are only counted.
pub const MAX_NAMED_REFUSALS: usize = 100;

/// What the proxy did during the call, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    /// How the program was kept to the proxy: `NetworkDoor::name`.
    pub confinement: &'static str,
    /// Connections opened upstream.
    pub connections: u64,
    /// Connections and requests refused, in all.
    pub refused: u64,
    /// The first [`MAX_NAMED_REFUSALS`] refusals.
    pub refusals: Vec<Refusal>,
    /// The first refusals by the sandbox file's `[internet]`, each target once, kept apart for
    /// the report's denials: a program's malformed or reset connections, however many, cannot
    /// push them out.
    pub policy_refusals: Vec<Refusal>,
    /// Servers' addresses that were not the call's (see [`Log::refuse_listen`]).
    pub listens_refused: Vec<std::net::SocketAddr>,
}

/// One refused connection or request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    pub why: String,
    /// Refused by the sandbox file's `[internet]` (not a malformed request, an unreachable host
    /// or another process): a denial of the call's.
    pub by_policy: bool,
    /// The change to the sandbox file that would allow it, where one would.
    pub fix: Option<crate::denials::Fix>,
    /// How many times it was refused alike (the same host, port and why).
    pub times: u64,
}

/// The log, even if a proxy thread panicked while holding it (the counts stay meaningful: each
/// update is one field).
pub fn lock(log: &Mutex<Log>) -> std::sync::MutexGuard<'_, Log> {
    log.lock().unwrap_or_else(|e| e.into_inner())
}

impl Log {
    pub fn refuse(&mut self, host: &str, port: u16, why: &str) {
        self.note(Refusal {
            host: host.to_owned(),
            port,
            why: why.to_owned(),
            by_policy: false,
            fix: None,
            times: 1,
        });
    }

    /// A server's address that is not the call's (the Landlock-only mode's loopback): a denial
    /// of the call's, not a connection's.
    pub fn refuse_listen(&mut self, asked: std::net::SocketAddr) {
        if self.listens_refused.len() < crate::denials::MAX_DENIALS && !self.listens_refused.contains(&asked)
        {
            self.listens_refused.push(asked);
        }
    }

    /// A refusal by the sandbox file's `[internet]`, with the change that would allow it.
    pub fn refuse_by_policy(&mut self, host: &str, port: u16, why: &str, fix: Option<crate::denials::Fix>) {
        self.note(Refusal {
            host: host.to_owned(),
            port,
            why: why.to_owned(),
            by_policy: true,
            fix,
            times: 1,
        });
    }

    fn note(&mut self, refusal: Refusal) {
        self.refused += 1;
        let again = |r: &Refusal| r.host == refusal.host && r.port == refusal.port;
        if refusal.by_policy
            && self.policy_refusals.len() < crate::denials::MAX_DENIALS
            && !self.policy_refusals.iter().any(again)
        {
            self.policy_refusals.push(refusal.clone());
        }
        // The same refusal again is counted, not named again: a program looping on one refused
        // address must not fill the list with it.
        let alike = |r: &Refusal| r.host == refusal.host && r.port == refusal.port && r.why == refusal.why;
        if let Some(known) = self.refusals.iter_mut().find(|r| alike(r)) {
            known.times += 1;
        } else if self.refusals.len() < MAX_NAMED_REFUSALS {
            self.refusals.push(refusal);
        }
    }

    /// The policy's refusals, as denials the report names (each target once).
    pub fn denials(&self) -> Vec<crate::denials::Denial> {
        let mut denials = Vec::new();
        for r in &self.policy_refusals {
            let denial = crate::denials::connect_refused(&r.host, r.port, &r.why, r.fix.clone());
            crate::denials::add(&mut denials, denial);
        }
        for asked in &self.listens_refused {
            crate::denials::add(&mut denials, crate::denials::listen_refused(*asked));
        }
        denials
    }
}
