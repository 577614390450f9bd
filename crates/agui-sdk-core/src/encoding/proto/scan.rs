//! Structural checks the reference decoder makes before decoding, which a protobuf
//! decoder alone does not: an envelope naming two different events, or a content part
//! or part source with two different arms in one occurrence, is malformed (protobuf
//! would silently keep the last one); and a frame with no known arm is either an event
//! from a later protocol (skippable) or broken bytes.

/// A protobuf field as the walker sees it.
struct Field<'a> {
    number: u32,
    /// The payload of a length-delimited field.
    payload: Option<&'a [u8]>,
}

/// Reads a varint as the reference's wire reader does for tags and lengths (uint32:
/// bits beyond 32 are dropped), `None` when the input ends inside it.
fn varint(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut result: u64 = 0;
    let mut shift = 0;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        if shift < 64 {
            result |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(result);
        }
        if shift > 70 {
            return None;
        }
    }
}

/// Walks the top-level fields of a message (the insides of groups are skipped), calling
/// `f` for each. `Err(())` when the bytes are not a well-formed message.
fn walk<'a>(data: &'a [u8], mut f: impl FnMut(Field<'a>) -> Result<(), ()>) -> Result<(), ()> {
    let mut pos = 0;
    let mut groups: Vec<u32> = Vec::new();
    while pos < data.len() {
        let tag = varint(data, &mut pos).ok_or(())? as u32;
        let number = tag >> 3;
        if number == 0 {
            return Err(());
        }
        let mut payload = None;
        match tag & 7 {
            0 => {
                varint(data, &mut pos).ok_or(())?;
            }
            1 => pos = pos.checked_add(8).ok_or(())?,
            2 => {
                let len = varint(data, &mut pos).ok_or(())? as u32 as usize;
                let end = pos.checked_add(len).ok_or(())?;
                payload = Some(data.get(pos..end).ok_or(())?);
                pos = end;
            }
            3 => {
                groups.push(number);
                continue;
            }
            4 => {
                if groups.pop() != Some(number) {
                    return Err(());
                }
                continue;
            }
            5 => pos = pos.checked_add(4).ok_or(())?,
            _ => return Err(()),
        }
        if pos > data.len() {
            return Err(());
        }
        if groups.is_empty() {
            f(Field { number, payload })?;
        }
    }
    if groups.is_empty() {
        Ok(())
    } else {
        Err(())
    }
}

/// Calls `f` on the payload of every occurrence of field `number`.
pub(super) fn each<'a>(
    data: &'a [u8],
    number: u32,
    mut f: impl FnMut(&'a [u8]) -> Result<(), ()>,
) -> Result<(), ()> {
    walk(data, |field| match field.payload {
        Some(p) if field.number == number => f(p),
        _ => Ok(()),
    })
}

/// Fails when one occurrence of a oneof message sets two different arms among
/// `arms` (length-delimited ones, as every arm here is), and checks each arm's payload.
fn exclusive_arms<'a>(
    data: &'a [u8],
    arms: std::ops::RangeInclusive<u32>,
    mut check: impl FnMut(u32, &'a [u8]) -> Result<(), ()>,
) -> Result<(), ()> {
    let mut seen = 0;
    walk(data, |field| match field.payload {
        Some(p) if arms.contains(&field.number) => {
            if seen != 0 && seen != field.number {
                return Err(());
            }
            seen = field.number;
            check(field.number, p)
        }
        _ => Ok(()),
    })
}

/// `InputContent`: one of text/image/audio/video/document; media parts hold an
/// `InputContentSource` (field 1) that is itself one of data/url/file.
pub(super) fn input_content(data: &[u8]) -> Result<(), ()> {
    exclusive_arms(data, 1..=5, |arm, part| {
        if arm == 1 {
            return Ok(());
        }
        each(part, 1, |source| {
            exclusive_arms(source, 1..=3, |_, _| Ok(()))
        })
    })
}

/// `Message`: content parts are field 8.
pub(super) fn message(data: &[u8]) -> Result<(), ()> {
    each(data, 8, input_content)
}

/// Checks an envelope: at most one known arm (repeated occurrences of the same one are
/// merged, as protobuf merges). Returns the known arm's field number, if there is one.
/// (Content parts with two kinds are refused by the codec as it reads them.)
pub(super) fn envelope(data: &[u8]) -> Result<Option<u32>, ()> {
    let mut arm: Option<u32> = None;
    walk(data, |field| {
        if !super::table::is_arm(field.number) {
            return Ok(());
        }
        if arm.is_some_and(|a| a != field.number) {
            return Err(());
        }
        arm = Some(field.number);
        Ok(())
    })?;
    Ok(arm)
}

/// A varint no wider than `max_bytes`, whose last byte is at most `last_max`.
fn bounded(data: &[u8], pos: &mut usize, max_bytes: usize, last_max: u8) -> Option<u64> {
    let mut result: u64 = 0;
    for i in 0..max_bytes {
        let byte = *data.get(*pos)?;
        *pos += 1;
        if i + 1 == max_bytes && byte > last_max {
            return None;
        }
        result |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(result);
        }
    }
    None
}

/// Whether `data` walks as a well-formed message with strictly bounded varints (tags
/// and lengths uint32, values uint64), groups closed by their own number.
fn walks_as_message(data: &[u8], mut top: impl FnMut(u32, u32, Option<&[u8]>) -> bool) -> bool {
    let mut pos = 0;
    let mut groups: Vec<u32> = Vec::new();
    while pos < data.len() {
        let Some(tag) = bounded(data, &mut pos, 5, 0x0f) else {
            return false;
        };
        let number = (tag >> 3) as u32;
        let wire = (tag & 7) as u32;
        if number == 0 {
            return false;
        }
        let at_top = groups.is_empty();
        let mut payload = None;
        match wire {
            3 => groups.push(number),
            4 => {
                if groups.pop() != Some(number) {
                    return false;
                }
            }
            0 => {
                if bounded(data, &mut pos, 10, 0x01).is_none() {
                    return false;
                }
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let Some(len) = bounded(data, &mut pos, 5, 0x0f) else {
                    return false;
                };
                let end = pos + len as usize;
                if end > data.len() {
                    return false;
                }
                payload = Some(&data[pos..end]);
                pos = end;
            }
            _ => return false,
        }
        if pos > data.len() {
            return false;
        }
        if at_top && wire != 4 && !top(number, wire, payload) {
            return false;
        }
    }
    groups.is_empty()
}

/// Whether a frame with no known arm names only arms from a later protocol (unknown
/// length-delimited fields whose payloads are well-formed messages): an event this
/// version does not know, which readers skip. Anything else is broken.
pub(super) fn names_only_future_arms(data: &[u8]) -> bool {
    let mut future = 0;
    walks_as_message(data, |number, wire, payload| {
        if super::table::is_arm(number) {
            return false;
        }
        if wire == 2 {
            if !payload.is_some_and(|p| walks_as_message(p, |_, _, _| true)) {
                return false;
            }
            future += 1;
        }
        true
    }) && future > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_different_arms_are_rejected() {
        // text_message_end {} and tool_call_end {}
        assert!(envelope(&[0x1a, 0x00, 0x32, 0x00]).is_err());
        // the same arm twice is fine (merged)
        assert_eq!(envelope(&[0x1a, 0x00, 0x1a, 0x00]), Ok(Some(3)));
    }

    #[test]
    fn future_arms() {
        // field 40, length-delimited, holding field 1 varint 1
        assert!(names_only_future_arms(&[0xc2, 0x02, 0x02, 0x08, 0x01]));
        // empty frame
        assert!(!names_only_future_arms(&[]));
        // a future arm whose payload is not a message
        assert!(!names_only_future_arms(&[0xc2, 0x02, 0x01, 0xff]));
        // only a varint field
        assert!(!names_only_future_arms(&[0xc0, 0x02, 0x01]));
    }

    #[test]
    fn content_parts_with_two_arms_are_rejected() {
        // TOOL_CALL_RESULT { content_parts: InputContent { text {}, image {} } }
        let part = [0x0a, 0x00, 0x12, 0x00];
        let mut arm = vec![0x3a, part.len() as u8];
        arm.extend_from_slice(&part);
        let mut env = vec![0xb2, 0x01, arm.len() as u8];
        env.extend_from_slice(&arm);
        assert_eq!(envelope(&env), Ok(Some(22)));
        let err = super::super::decode_message(&env).unwrap_err();
        assert!(err.to_string().contains("two kinds"), "{err}");
    }
}
