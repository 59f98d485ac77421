//! Request bodies: JSON read into a wire type, every problem named by its field.
//!
//! Before a body reaches its type it is held to what the API description says of it, where
//! serde alone would be more lenient: the body and every object in it must be JSON objects
//! (serde would also take an array of the fields in order), and a whole number written
//! with a fraction (`3.0`) is the integer it is, as JSON Schema counts it. Free-form parts
//! (an intent's `args`) are left exactly as sent.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value};

use super::error::ApiError;
use crate::domain::canonical::json_kind;

/// Parse a JSON body into `T`, naming the field and the problem on failure.
pub fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    parse_body_with(body, |_| false)
}

/// [`parse_body`], leaving the top-level fields for which `free_form` is true as they were
/// sent (an intent's `args`; the fields a downstream adds to its webhook).
///
/// A body with no `[` anywhere (no array, not even in a string) that serde reads straight
/// into `T` is taken as read: with no array in it, all the description holds a body to that
/// serde does not is a whole number written with a fraction, which serde refuses for an
/// integer and reads as the same number for a float. That holds while no request type has a
/// field of free JSON (`Value`) outside its `free_form` ones, where the fraction would be
/// kept (a test holds the API description's request bodies to it). Every other body, and every one serde refuses, is read through the fields, which
/// also names what was wrong. Read straight, an order's bodies cost less than half as much
/// (`cargo bench --bench coordinator -- bodies`).
pub fn parse_body_with<T: serde::de::DeserializeOwned>(
    body: &[u8],
    free_form: impl Fn(&str) -> bool,
) -> Result<T, ApiError> {
    if !body.contains(&b'[')
        && let Ok(read) = serde_json::from_slice(body)
    {
        return Ok(read);
    }
    parse_fields_with(parse_object(body)?, free_form)
}

/// A body that must be one JSON object: its fields, as sent.
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    match value {
        Value::Object(fields) => Ok(fields),
        other => Err(ApiError::bad_request(format!(
            "the body must be a JSON object, not {}",
            json_kind(&other)
        ))),
    }
}

/// [`parse_body_with`] for the fields of an object already read (one intent of a batch).
pub fn parse_fields_with<T: serde::de::DeserializeOwned>(
    mut fields: Map<String, Value>,
    free_form: impl Fn(&str) -> bool,
) -> Result<T, ApiError> {
    for (name, field) in fields.iter_mut() {
        if !free_form(name) {
            hold(field, name)?;
        }
    }
    serde_path_to_error::deserialize(Value::Object(fields)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let at_root = path.is_empty() || path == ".";
        // A field that is missing is named by serde only in its message.
        let missing = inner
            .to_string()
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
            .map(|(name, _)| name.to_string());
        match (at_root, missing) {
            (true, Some(name)) => ApiError::fields(BTreeMap::from([(
                name,
                "this field is required".to_string(),
            )])),
            (true, None) => ApiError::bad_request(format!("the body is not valid: {inner}")),
            (false, Some(name)) => ApiError::fields(BTreeMap::from([(
                format!("{path}.{name}"),
                "this field is required".to_string(),
            )])),
            (false, None) => ApiError::fields(BTreeMap::from([(path, inner.to_string())])),
        }
    })
}

/// Hold one field (at `path`) to the description: no arrays (no request field is one
/// outside the free-form parts; a batch's `intents`, the one list a body holds, is read by
/// `create` before its intents come here one by one), whole numbers as integers, and the
/// same inside objects.
fn hold(value: &mut Value, path: &str) -> Result<(), ApiError> {
    match value {
        Value::Array(_) => Err(ApiError::fields(BTreeMap::from([(
            path.to_string(),
            "expected an object or a single value, found an array".to_string(),
        )]))),
        Value::Number(n) => {
            if let Some(whole) = whole(n) {
                *n = whole;
            }
            Ok(())
        }
        Value::Object(map) => hold_all(map, path),
        _ => Ok(()),
    }
}

fn hold_all(map: &mut Map<String, Value>, path: &str) -> Result<(), ApiError> {
    for (name, field) in map.iter_mut() {
        hold(field, &format!("{path}.{name}"))?;
    }
    Ok(())
}

/// `n` as an integer when it is a float with no fraction that fits one.
fn whole(n: &Number) -> Option<Number> {
    let f = n.as_f64().filter(|_| n.is_f64())?;
    if f.fract() != 0.0 || !f.is_finite() {
        return None;
    }
    if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
        Some(Number::from(f as u64))
    } else if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
        Some(Number::from(f as i64))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Authorize, CommandBody, CreateIntent};

    #[test]
    fn whole_numbers_with_a_fraction_are_integers_and_args_stay_as_sent() {
        let body = br#"{"tenant": "acme", "actor": "a", "purpose": "p", "operation": "o",
            "tool": "t", "consequence": "read", "args": {"qty": 3.0, "list": [1, 2]},
            "deadline_secs": 60.0, "max_attempts": 3.0, "release_id": "r1"}"#;
        let req: CreateIntent = parse_body_with(body, |f| f == "args").expect("accepted");
        assert_eq!((req.deadline_secs, req.max_attempts), (60, 3));
        assert_eq!(req.args["qty"].to_string(), "3.0");
        assert!(req.args["list"].is_array());
        let fraction =
            br#"{"authorization_version": "v1", "approver": "a", "valid_for_secs": 2.5}"#;
        let refused = parse_body::<Authorize>(fraction).expect_err("a fraction");
        assert!(refused.fields.contains_key("valid_for_secs"), "{refused:?}");
    }

    /// Bodies with no array, read straight, come out as read through their fields: whole
    /// numbers with a fraction in integer fields, in free-form fields kept as sent, a key
    /// sent twice (the last one counts) and fields left to their defaults.
    #[test]
    fn a_body_read_straight_is_what_its_fields_give() {
        use crate::wire::ReceiptDelivery;
        let create = |extra: &str| {
            format!(
                r#"{{"tenant": "acme", "actor": "a", "purpose": "p", "operation": "o",
                "tool": "t", "consequence": "write", "args": {{"qty": 3.0, "at": {{"x": 1e2}}}},
                "release_id": "r1"{extra}}}"#
            )
        };
        // The first is read straight; serde refuses the other two (a fraction for an
        // integer, a key sent twice), which are read through their fields.
        let bodies = [
            (create(r#", "deadline_secs": 60, "max_attempts": 3"#), true),
            (
                create(r#", "deadline_secs": 60.0, "max_attempts": 3.0"#),
                false,
            ),
            (
                create(r#", "deadline_secs": 5, "deadline_secs": 60, "max_attempts": 3"#),
                false,
            ),
        ];
        for (body, straight) in bodies {
            let read = serde_json::from_slice::<CreateIntent>(body.as_bytes());
            assert_eq!(read.is_ok(), straight, "{body}");
            let through_fields: CreateIntent =
                parse_fields_with(parse_object(body.as_bytes()).expect("an object"), |f| {
                    f == "args"
                })
                .expect("accepted");
            let parsed: CreateIntent =
                parse_body_with(body.as_bytes(), |f| f == "args").expect("accepted");
            assert_eq!(parsed, through_fields, "{body}");
            assert_eq!((parsed.deadline_secs, parsed.max_attempts), (60, 3));
            assert_eq!(parsed.args["qty"].to_string(), "3.0");
            assert_eq!(parsed.args["at"]["x"].to_string(), "100.0");
        }
        let webhook = br#"{"event_id": "e1", "action_key": "k", "downstream_id": "d",
            "amount": 3.0, "extra": {"n": 2.0}, "amount": 4.0}"#;
        let known = |f: &str| ["event_id", "action_key", "downstream_id", "status"].contains(&f);
        assert!(
            serde_json::from_slice::<ReceiptDelivery>(webhook).is_ok(),
            "read straight"
        );
        let parsed: ReceiptDelivery = parse_body_with(webhook, |f| !known(f)).expect("accepted");
        let through_fields: ReceiptDelivery =
            parse_fields_with(parse_object(webhook).expect("an object"), |f| !known(f))
                .expect("accepted");
        assert_eq!(parsed, through_fields);
        assert_eq!(parsed.other["amount"].to_string(), "4.0");
        let refused = parse_body::<Authorize>(br#"{"authorization_version": 1}"#)
            .expect_err("a number for a string");
        assert!(
            refused.fields.contains_key("authorization_version"),
            "named as read through the fields: {refused:?}"
        );
    }

    /// The parts of a request body where a number may keep its fraction: a field of
    /// numbers or of free JSON, or an object's fields beyond those it names. A schema
    /// without a type is one of its `oneOf` or `anyOf` alternatives, each walked; beside
    /// a type, those and `allOf` only narrow the fields named with it.
    fn fractional_parts(doc: &Value, schema: &Value, at: &str, found: &mut Vec<String>) {
        let mut schema = schema;
        while let Some(Value::String(target)) = schema.get("$ref") {
            let pointer = target.strip_prefix('#').expect("a local reference");
            schema = doc.pointer(pointer).expect("the reference resolves");
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let alternatives = ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| schema.get(*k).and_then(Value::as_array))
            .flatten();
        if types.is_empty() && schema.get("oneOf").or(schema.get("anyOf")).is_some() {
            for alternative in alternatives {
                fractional_parts(doc, alternative, at, found);
            }
            return;
        }
        let named = schema.get("properties").and_then(Value::as_object);
        let free =
            types.is_empty() && schema.get("enum").is_none() && schema.get("const").is_none();
        let more_fields = match schema.get("additionalProperties") {
            Some(Value::Bool(allowed)) => *allowed,
            Some(_) => true,
            None => types.contains(&"object") && named.is_none(),
        };
        if types.contains(&"number") || free || more_fields {
            found.push(if at.is_empty() {
                "(the body)".into()
            } else {
                at.into()
            });
        }
        for (name, field) in named.into_iter().flatten() {
            fractional_parts(doc, field, &format!("{at}.{name}"), found);
        }
        if let Some(items) = schema.get("items") {
            fractional_parts(doc, items, &format!("{at}[]"), found);
        }
    }

    /// What [`parse_body_with`] reads straight keeps a whole number's fraction where the
    /// read through the fields makes it an integer: in a field of numbers or free JSON. Each
    /// such part of a request body in the API description is free-form at its call site
    /// (left as sent either way), and no other request body has one: a field added with
    /// one must be made free-form, or the straight read revisited.
    #[test]
    fn a_number_keeps_its_fraction_only_where_the_body_is_free_form() {
        let doc: Value = serde_json::from_str(crate::coordinator::ops::OPENAPI_JSON).expect("JSON");
        let free_form: BTreeMap<&str, Vec<&str>> = BTreeMap::from([
            ("post /v1/intents", vec![".args"]),
            ("post /v1/intents/batch", vec![".intents[].args"]),
            // The fields a downstream adds to its webhook.
            ("post /v1/receipts/{connector}", vec!["(the body)"]),
        ]);
        let mut bodies = 0;
        for (path, operations) in doc["paths"].as_object().expect("paths") {
            for (method, operation) in operations.as_object().expect("operations") {
                let Some(schema) =
                    operation.pointer("/requestBody/content/application~1json/schema")
                else {
                    continue;
                };
                bodies += 1;
                let mut found = Vec::new();
                fractional_parts(&doc, schema, "", &mut found);
                let name = format!("{method} {path}");
                let expected = free_form.get(name.as_str()).cloned().unwrap_or_default();
                assert_eq!(found, expected, "{name}");
            }
        }
        assert_eq!(bodies, 8, "every request body of the description");
    }

    #[test]
    fn arrays_in_place_of_objects_are_refused_naming_the_field() {
        let top = br#"["acme", "agent-7"]"#;
        let refused = parse_body::<Authorize>(top).expect_err("an array body");
        assert!(refused.message.contains("JSON object"), "{refused:?}");
        let nested = br#"{"command_id": "cmd_01kb0000000000000000000001", "kind": "pause",
            "target": {"scope": ["acme"]}}"#;
        let refused = parse_body::<CommandBody>(nested).expect_err("an array scope");
        assert!(refused.fields.contains_key("target.scope"), "{refused:?}");
    }
}
