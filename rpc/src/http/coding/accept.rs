//! What `Accept-Encoding` (RFC 9110 §12.5.3) says about coding an answer `deflate`.

/// Whether an answer that can go out deflate-coded should: the client accepts `deflate`
/// (named, or through `*`) with a weight above 0, and does not weigh `identity` higher in an
/// entry of its own (the smaller answer is the server's preference, as for any server that
/// compresses when it may). An answer no coding suits goes out as identity anyway (RFC 9110
/// allows it instead of 406).
/// Without the field, identity. Names are case-insensitive; an entry with a malformed weight
/// counts for nothing. Only the first `Accept-Encoding` field is read.
pub fn prefers_deflate(field: Option<&str>) -> bool {
    let Some(field) = field else {
        return false;
    };
    let (mut deflate, mut identity, mut any) = (None, None, None::<u16>);
    for entry in field.split(',') {
        let mut parts = entry.split(';');
        let coding = parts.next().unwrap_or_default().trim_matches(OWS);
        let slot = if coding.eq_ignore_ascii_case("deflate") {
            &mut deflate
        } else if coding.eq_ignore_ascii_case("identity") {
            &mut identity
        } else if coding == "*" {
            &mut any
        } else {
            continue;
        };
        if slot.is_none() {
            *slot = weight(parts);
        }
    }
    let deflate = deflate.or(any).unwrap_or(0);
    deflate > 0 && deflate >= identity.unwrap_or(0)
}

/// Optional whitespace.
const OWS: [char; 2] = [' ', '\t'];

/// An entry's weight in thousandths, from its parameters (1000 without `q`; other
/// parameters are ignored); `None` when `q` is malformed.
fn weight<'a>(params: impl Iterator<Item = &'a str>) -> Option<u16> {
    let mut q = 1000;
    for p in params {
        if let Some((name, value)) = p.split_once('=')
            && name.trim_matches(OWS).eq_ignore_ascii_case("q")
        {
            q = qvalue(value.trim_matches(OWS))?;
        }
    }
    Some(q)
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`, in thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        let digit = fraction
            .as_bytes()
            .get(i)
            .map_or(0, |b| u16::from(b - b'0'));
        thousandths = thousandths * 10 + digit;
    }
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_agents_and_browsers_send_asks_for_deflate() {
        for field in [
            "gzip, deflate",
            "gzip, deflate, br, zstd",
            "gzip,deflate",
            "DEFLATE",
            "br;q=1.0, deflate;q=0.5, *;q=0.1",
            "*",
            "deflate;q=0.5, identity;q=0.5",
            "deflate ; q=1",
            "deflate;Q=1",
            "deflate;q=0.001",
            "br, deflate;q=0.9, gzip",
            "deflate;q=0.5, *",
            "deflate;level=9",
            "gzip;q=1, deflate;q=1.000",
        ] {
            assert!(prefers_deflate(Some(field)), "{field:?}");
        }
    }

    #[test]
    fn identity_is_the_answer_unless_deflate_is_accepted_and_preferred() {
        for field in [
            "",
            "gzip",
            "gzip, br",
            "identity",
            "deflate;q=0",
            "deflate;q=0.000",
            "*;q=0",
            "*;q=0, identity",
            // Nothing is acceptable: identity goes out, not a 406.
            "identity;q=0, *;q=0",
            "deflate;q=0, *",
            "deflate;q=0.5, identity",
            "x-deflate",
            "deflated",
            // Malformed weights count for nothing.
            "deflate;q=2",
            "deflate;q=1.5",
            "deflate;q=0.5000",
            "deflate;q=.5",
            "deflate;q=",
            "deflate;q=-1",
        ] {
            assert!(!prefers_deflate(Some(field)), "{field:?}");
        }
        assert!(!prefers_deflate(None));
    }

    #[test]
    fn the_first_entry_of_a_coding_counts() {
        assert!(!prefers_deflate(Some("deflate;q=0, deflate")));
        assert!(prefers_deflate(Some("deflate, deflate;q=0")));
        // A malformed first entry leaves the next one to count.
        assert!(prefers_deflate(Some("deflate;q=x, deflate")));
    }

    #[test]
    fn weights_are_read_to_the_thousandth() {
        assert_eq!(qvalue("0"), Some(0));
        assert_eq!(qvalue("0."), Some(0));
        assert_eq!(qvalue("0.5"), Some(500));
        assert_eq!(qvalue("0.05"), Some(50));
        assert_eq!(qvalue("0.123"), Some(123));
        assert_eq!(qvalue("1"), Some(1000));
        assert_eq!(qvalue("1.000"), Some(1000));
        assert_eq!(qvalue("1.001"), None);
        assert_eq!(qvalue("0.1234"), None);
        assert_eq!(qvalue("0.a"), None);
        assert_eq!(qvalue(""), None);
        assert_eq!(qvalue("01"), None);
    }
}
