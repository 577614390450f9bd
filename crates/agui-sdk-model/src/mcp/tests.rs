use super::server::{fits, plain_name};
use super::*;
use agui_sdk_core::types::ContentPart;

#[test]
fn results_become_text_parts_and_notes() {
    let r = json!({ "content": [
        { "type": "text", "text": "hi" },
        { "type": "image", "data": "aGk=", "mimeType": "image/png" },
        { "type": "hologram" },
    ]});
    let o = convert(&r, 1000, "s");
    let Content::Parts(p) = &o.content else {
        panic!("{:?}", o.content)
    };
    assert_eq!(p.len(), 3);
    assert!(matches!(p[1], ContentPart::Image(_)));
    assert!(o
        .for_model
        .starts_with("hi\n[the tool returned an image (image/png, 4 bytes"));
    assert!(o.for_model.contains("\"hologram\""));
    let o = convert(
        &json!({ "content": [{ "type": "text", "text": "x".repeat(11) }], "isError": true }),
        10,
        "s",
    );
    assert!(
        o.for_model.contains("over the limit of 10 bytes"),
        "{}",
        o.for_model
    );
    let o = convert(
        &json!({ "content": [{ "type": "text", "text": "bad" }], "isError": true }),
        10,
        "s",
    );
    assert_eq!(o.for_model, "error: bad");
    assert_eq!(o.content, Content::Text("error: bad".into()));
}

#[test]
fn names() {
    assert_eq!(plain_name("a.b/c"), "a_b_c");
    assert!(fits("get-sum_2"));
    assert!(!fits("a.b"));
    assert!(!fits(&"x".repeat(65)));
}
