//! The call's proxy for `[internet]` (issue 6): so far only its decisions ([`policy`]), built and
//! tested on their own. The proxy's sockets, its confinement (a network namespace whose only
//! door is the proxy) and its place in `lnk sandbox run` are not built yet, so the launcher still
//! refuses a sandbox whose `[internet]` lists the tool (exit 125, "not supported yet").

pub mod policy;
