//! `solowg genkey`, `genpsk` and `pubkey`, as `wg`'s: base64 keys on standard output, the
//! private key for `pubkey` on standard input (never in the arguments, which every user can
//! read in /proc). What routers without wireguard-tools need to set up a tunnel by hand.

use crate::crypto::{self, Rng};
use crate::proto::peer::{base64, key_from_base64_into};
use std::io::{self, Read, Write};
use zeroize::Zeroizing;

/// Longest input `pubkey` reads: a key and some whitespace.
const MAX_INPUT: u64 = 1024;

/// Runs `cmd` (genkey, genpsk or pubkey); returns the exit status.
pub fn run(cmd: &str) -> i32 {
    let out = match cmd {
        "pubkey" => {
            let mut input = Zeroizing::new(Vec::new());
            if let Err(e) = io::stdin().take(MAX_INPUT).read_to_end(&mut input) {
                eprintln!("solowg pubkey: cannot read standard input: {e}");
                return 1;
            }
            match public_of(&input) {
                Some(p) => p,
                None => {
                    eprintln!("solowg pubkey: Key is not the correct length or format");
                    return 1;
                }
            }
        }
        _ => {
            let mut rng = match Rng::from_os() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("solowg {cmd}: no randomness: {e}");
                    return 1;
                }
            };
            let key = if cmd == "genkey" {
                rng.private_key()
            } else {
                rng.key()
            };
            Zeroizing::new(base64(&key[..]))
        }
    };
    let mut stdout = io::stdout().lock();
    if writeln!(stdout, "{}", out.as_str())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return 1;
    }
    0
}

/// The base64 public key of a base64 private key (surrounding whitespace allowed), None if
/// it is not one.
fn public_of(input: &[u8]) -> Option<Zeroizing<String>> {
    let text = std::str::from_utf8(input).ok()?.trim();
    let mut k = Zeroizing::new([0u8; 32]);
    key_from_base64_into(text, &mut k).then(|| Zeroizing::new(base64(&crypto::public_key(&k))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pubkey_matches_a_known_pair_and_refuses_garbage() {
        // RFC 7748 section 6.1, Alice: private 77076d0a..., public 8520f009...
        let private = "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=";
        assert_eq!(
            public_of(format!("  {private}\n").as_bytes())
                .as_deref()
                .map(String::as_str),
            Some("hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo=")
        );
        for bad in [
            "",
            "abc",
            "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LC=",
            "\u{ff}",
        ] {
            assert!(public_of(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(public_of(&[0xff, 0xfe]).is_none());
    }
}
