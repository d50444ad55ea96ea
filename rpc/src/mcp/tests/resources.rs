//! Resources and templates in both eras.

use super::*;

#[test]
fn resources_and_not_found_in_both_eras() {
    let mut s = server();
    let (_, v) = modern_json(&mut s, "resources/list", json!({}), T0);
    assert_eq!(v["result"]["resources"][0]["uri"], "irix7://status");
    let (_, v) = modern_json(&mut s, "resources/templates/list", json!({}), T0);
    assert_eq!(
        v["result"]["resourceTemplates"][0]["uriTemplate"],
        "irix7://file/{name}"
    );
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://status"}),
        T0,
    );
    assert_eq!(
        v["result"]["contents"][0],
        json!({"uri": "irix7://status", "mimeType": "application/json", "text": "{\"up\":1}"})
    );
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://file/abc"}),
        T0,
    );
    assert_eq!(v["result"]["contents"][0]["blob"], "YWJj");
    for uri in ["irix7://nothing", "irix7://file/missing"] {
        let (_, v) = modern_json(&mut s, "resources/read", json!({"uri": uri}), T0);
        assert_eq!(
            (v["error"]["code"].as_i64(), &v["error"]["data"]["uri"]),
            (Some(-32602), &json!(uri))
        );
    }
    let (_, v) = modern_json(
        &mut s,
        "resources/read",
        json!({"uri": "irix7://broken"}),
        T0,
    );
    assert_eq!(v["error"]["code"], -32603);
    assert_eq!(v["error"]["message"], "E_IO: device gone");
    let (sid, _) = initialize(&mut s, "2025-11-25", T0);
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "resources/read",
        json!({"uri": "irix7://nothing"}),
        T0,
    );
    assert_eq!(
        (v["error"]["code"].as_i64(), &v["error"]["data"]["uri"]),
        (Some(-32002), &json!("irix7://nothing"))
    );
    let (_, v) = legacy_json(
        &mut s,
        &sid,
        "resources/read",
        json!({"uri": "irix7://status"}),
        T0,
    );
    assert!(v["result"].get("ttlMs").is_none());
}
