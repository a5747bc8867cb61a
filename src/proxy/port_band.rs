//! The ports the call's listeners take in the Landlock-only mode (see [`super::loopback`]):
//! beside the host's automatic range (`ip_local_port_range`), so that no listener of a call's
//! withholds a port any other socket's automatic choice would take.
//!
//! What it trusts: the range's text as the kernel writes it.

/// The ports the helper's listeners take: those above the host's automatic range, or below it
/// (from 1024) where the range reaches 65535. Never a port an automatic choice takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortBand {
    pub first: u16,
    pub last: u16,
}

impl PortBand {
    /// The band beside `ip_local_port_range`'s text (`FIRST\tLAST`), or `None` when the range
    /// leaves no port above 1023 outside it.
    pub fn beside(range: &str) -> Option<PortBand> {
        let mut numbers = range.split_whitespace().map(|n| n.parse::<u16>());
        let (Some(Ok(low)), Some(Ok(high))) = (numbers.next(), numbers.next()) else { return None };
        if high < u16::MAX {
            Some(PortBand { first: high + 1, last: u16::MAX })
        } else if low > 1024 {
            Some(PortBand { first: 1024, last: low - 1 })
        } else {
            None
        }
    }

    /// How many ports the band holds.
    pub fn ports(self) -> u32 {
        u32::from(self.last) - u32::from(self.first) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_take_ports_beside_the_hosts_automatic_range() {
        assert_eq!(PortBand::beside("32768\t60999\n"), Some(PortBand { first: 61000, last: 65535 }));
        assert_eq!(PortBand::beside("1024 65535"), None, "nothing is left outside");
        assert_eq!(PortBand::beside("40000 65535"), Some(PortBand { first: 1024, last: 39999 }));
        assert_eq!(PortBand::beside("x y"), None);
        assert_eq!(PortBand::beside(""), None);
    }
}
