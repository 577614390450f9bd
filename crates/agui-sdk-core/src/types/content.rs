//! Message content: plain text or a list of parts (text, image, audio, video,
//! document), and where a media part's bytes come from.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::{JsonText, NotNullText};

wire_struct! {
    /// A text part.
    pub struct TextPart {
        /// Reserved identifier of the part.
        opt id: String = "id",
        /// The text.
        req text: String = "text",
        /// Any JSON except `null`.
        opt metadata: JsonText = "metadata" via NotNullText,
    }
}

wire_struct! {
    /// An image, audio, video or document part (the four share one shape; the
    /// [`ContentPart`] variant says which).
    pub struct MediaPart {
        /// Reserved identifier of the part.
        opt id: String = "id",
        /// Where the bytes are.
        req source: PartSource = "source",
        /// Any JSON except `null` (not restricted to objects).
        opt metadata: JsonText = "metadata" via NotNullText,
    }
}

wire_struct! {
    /// Bytes carried inline, base64-encoded.
    pub struct DataSource {
        /// Base64 data (not validated).
        req value: String = "value",
        /// MIME type of the data (required for inline data).
        req mime_type: String = "mimeType",
    }
}

wire_struct! {
    /// Bytes referenced by URL.
    pub struct UrlSource {
        /// The URL (any scheme, not validated).
        req value: String = "value",
        /// MIME type, when known.
        opt mime_type: String = "mimeType",
    }
}

wire_struct! {
    /// Bytes already held by a provider, named by a handle it issued.
    pub struct FileSource {
        /// The provider's handle (opaque: never fetched or parsed).
        req value: String = "value",
        /// Lower-case vendor id of the provider (`openai`, `anthropic`, ...).
        opt provider: String = "provider",
        /// MIME type, when known.
        opt mime_type: String = "mimeType",
    }
}

wire_union! {
    /// Where a media part's bytes come from, discriminated by `type`.
    pub enum PartSource : tag "type", expecting "a part source object with a `type` of data, url or file" {
        /// `data`: inline.
        Data(DataSource) = "data",
        /// `url`: by reference.
        Url(UrlSource) = "url",
        /// `file`: a provider handle.
        File(FileSource) = "file",
    }
}

wire_union! {
    /// One part of a message body, discriminated by `type`.
    pub enum ContentPart : tag "type", expecting "a content part object with a `type` of text, image, audio, video or document" {
        /// `text`.
        Text(TextPart) = "text",
        /// `image`.
        Image(MediaPart) = "image",
        /// `audio`.
        Audio(MediaPart) = "audio",
        /// `video`.
        Video(MediaPart) = "video",
        /// `document`.
        Document(MediaPart) = "document",
    }
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text(TextPart {
            text: text.into(),
            ..TextPart::wire_blank()
        })
    }

    /// An image part from a URL.
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentPart::Image(MediaPart {
            source: PartSource::Url(UrlSource {
                value: url.into(),
                ..UrlSource::wire_blank()
            }),
            ..MediaPart::wire_blank()
        })
    }
}

/// The content of a user or tool message (and of `TOOL_CALL_RESULT`): a string, or a
/// list of parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// A list of parts.
    Parts(Vec<ContentPart>),
}

impl Default for Content {
    fn default() -> Self {
        Content::Text(String::new())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl From<Vec<ContentPart>> for Content {
    fn from(p: Vec<ContentPart>) -> Self {
        Content::Parts(p)
    }
}

impl Content {
    /// The concatenation of the text parts (the text itself for plain content); media
    /// parts contribute nothing.
    pub fn to_text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }

    /// Whether any part is not text.
    pub fn has_media(&self) -> bool {
        matches!(self, Content::Parts(p) if p.iter().any(|p| !matches!(p, ContentPart::Text(_))))
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => s.serialize_str(t),
            Content::Parts(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(p) = seq.next_element::<ContentPart>()? {
                    parts.push(p);
                }
                Ok(Content::Parts(parts))
            }
        }
        d.deserialize_any(V)
    }
}

impl crate::wire::shape::Blank for PartSource {
    fn blank() -> Self {
        PartSource::Url(UrlSource::wire_blank())
    }
}
