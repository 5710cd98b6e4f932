//! The host side of the sandbox's `URL` and `URLSearchParams` (`node:url`, and the globals of
//! the same names): parsing, resolution against a base, the setters and the
//! `application/x-www-form-urlencoded` parser and serializer, all as the WHATWG URL standard
//! defines them, by the `url` crate (`url::quirks` is its implementation of the standard's API,
//! `form_urlencoded` its form encoding).
//!
//! The JavaScript side (`js/node/url.js`) keeps each `URL`'s components as this module answers
//! them and its search parameters as a list linked to it; only that module may import these
//! functions (`covel:url-host`). Text reaches Rust as USVStrings (lone surrogates already
//! U+FFFD), and every input is bounded: a URL or setter value longer than
//! [`MAX_URL_UNITS`] is refused (Chromium's limit), form text longer than [`MAX_FORM_UNITS`]
//! too, so no call makes the host copy more than a runtime could hold.

use rquickjs::function::Opt;
use rquickjs::module::{Declarations, Exports, ModuleDef};
use rquickjs::{Array, Ctx, Exception, Function, Result, Value};
use url::Url;

/// The engine name of the host functions' module.
pub const URL_HOST: &str = "covel:url-host";

/// The longest URL (and setter value) in UTF-16 code units: Chromium's `kMaxURLChars`, 2 Mi.
/// Browsers treat a longer URL as invalid; here it is refused with a message saying so.
pub const MAX_URL_UNITS: usize = 2 * 1024 * 1024;

/// The most UTF-16 code units of form text one call parses or serializes (8 Mi): far beyond
/// any query or form body, and small enough that the host's own copy (up to three bytes a unit
/// once percent-encoded) stays a fraction of what a runtime may hold.
pub const MAX_FORM_UNITS: usize = 8 * 1024 * 1024;
/// How many pairs are read between two looks at the call's deadline.
const DEADLINE_STRIDE: usize = 4096;

/// The components of a URL, in the order [`components`] answers them.
pub const COMPONENTS: [&str; 11] = [
    "href", "origin", "protocol", "username", "password", "host", "hostname", "port", "pathname",
    "search", "hash",
];

/// Why a URL could not be made or changed, as the `TypeError` plugin code sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("Invalid URL: {why}")]
    Invalid { why: url::ParseError },
    #[error("Invalid base URL: {why}")]
    InvalidBase { why: url::ParseError },
    #[error(
        "Invalid URL: {what} has {units} UTF-16 code units, more than the {MAX_URL_UNITS} allowed here"
    )]
    UrlTooLong { what: &'static str, units: usize },
    #[error(
        "URLSearchParams: {what} has {units} UTF-16 code units, more than the {MAX_FORM_UNITS} allowed here"
    )]
    FormTooLong { what: &'static str, units: usize },
    #[error("URL has no setter for {0:?}")]
    NoSuchComponent(String),
}

/// How many UTF-16 code units `text` has, when that is more than `limit`.
fn units_over(text: &str, limit: usize) -> Option<usize> {
    // A UTF-8 byte is at most one UTF-16 unit: only a text over the limit in bytes needs counting.
    if text.len() <= limit {
        return None;
    }
    let units = text.encode_utf16().count();
    (units > limit).then_some(units)
}

/// Refuses a URL (or a setter's value) longer than [`MAX_URL_UNITS`].
fn url_within(what: &'static str, text: &str) -> std::result::Result<(), UrlError> {
    match units_over(text, MAX_URL_UNITS) {
        Some(units) => Err(UrlError::UrlTooLong { what, units }),
        None => Ok(()),
    }
}

/// Refuses form text longer than [`MAX_FORM_UNITS`].
fn form_within(what: &'static str, text: &str) -> std::result::Result<(), UrlError> {
    match units_over(text, MAX_FORM_UNITS) {
        Some(units) => Err(UrlError::FormTooLong { what, units }),
        None => Ok(()),
    }
}

/// `new URL(input, base)`: `input` parsed, against `base` when there is one.
pub fn parse(input: &str, base: Option<&str>) -> std::result::Result<Url, UrlError> {
    url_within("the URL", input)?;
    let base = match base {
        Some(base) => {
            url_within("the base URL", base)?;
            Some(Url::parse(base).map_err(|why| UrlError::InvalidBase { why })?)
        }
        None => None,
    };
    let url = Url::options()
        .base_url(base.as_ref())
        .parse(input)
        .map_err(|why| UrlError::Invalid { why })?;
    url_within("the URL", url.as_str())?;
    Ok(url)
}

/// The URL's components as its getters answer them, in the order of [`COMPONENTS`].
pub fn components(url: &Url) -> [String; 11] {
    use url::quirks as q;
    [
        q::href(url).to_string(),
        q::origin(url),
        q::protocol(url).to_string(),
        q::username(url).to_string(),
        q::password(url).to_string(),
        q::host(url).to_string(),
        q::hostname(url).to_string(),
        q::port(url).to_string(),
        q::pathname(url).to_string(),
        q::search(url).to_string(),
        q::hash(url).to_string(),
    ]
}

/// Runs the setter of `component` with `value`. As the standard says, only `href` fails on a
/// value it cannot take; the other setters leave the URL as it was.
pub fn set(url: &mut Url, component: &str, value: &str) -> std::result::Result<(), UrlError> {
    use url::quirks as q;
    url_within("the new value", value)?;
    let mut changed = url.clone();
    match component {
        "href" => q::set_href(&mut changed, value).map_err(|why| UrlError::Invalid { why })?,
        "protocol" => q::set_protocol(&mut changed, value).unwrap_or(()),
        "username" => q::set_username(&mut changed, value).unwrap_or(()),
        "password" => q::set_password(&mut changed, value).unwrap_or(()),
        "host" => q::set_host(&mut changed, value).unwrap_or(()),
        "hostname" => q::set_hostname(&mut changed, value).unwrap_or(()),
        "port" => q::set_port(&mut changed, value).unwrap_or(()),
        "pathname" => q::set_pathname(&mut changed, value),
        "search" => q::set_search(&mut changed, value),
        "hash" => q::set_hash(&mut changed, value),
        other => return Err(UrlError::NoSuchComponent(other.to_string())),
    }
    // A URL grown past the limit by its setters is refused as a parsed one would be.
    url_within("the URL", changed.as_str())?;
    *url = changed;
    Ok(())
}

/// One name or value as `application/x-www-form-urlencoded` writes it (a pair is
/// `name=value`, pairs are joined by `&`).
pub fn form_encode(text: &str) -> std::result::Result<String, UrlError> {
    form_within("a form name or value", text)?;
    Ok(url::form_urlencoded::byte_serialize(text.as_bytes()).collect())
}

/// The components as a JavaScript array.
fn components_array<'js>(ctx: &Ctx<'js>, url: &Url) -> Result<Array<'js>> {
    let out = Array::new(ctx.clone())?;
    for (i, part) in components(url).into_iter().enumerate() {
        out.set(i, part)?;
    }
    Ok(out)
}

fn throw(ctx: &Ctx<'_>, error: &UrlError) -> rquickjs::Error {
    Exception::throw_type(ctx, &error.to_string())
}

/// `covel:url-host`: the functions `node:url` calls. Only that module may import it.
pub struct UrlHostModule;

impl ModuleDef for UrlHostModule {
    fn declare<'js>(decl: &Declarations<'js>) -> Result<()> {
        for name in ["parse", "set", "formParse", "formEncode", "MAX_URL_UNITS"] {
            decl.declare(name)?;
        }
        Ok(())
    }

    fn evaluate<'js>(ctx: &Ctx<'js>, exports: &Exports<'js>) -> Result<()> {
        // The components, or the reason as text (`URL.canParse` asks without an exception).
        exports.export(
            "parse",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, input: String, base: Opt<String>| -> Result<Value<'js>> {
                    match parse(&input, base.0.as_deref()) {
                        Ok(url) => Ok(components_array(&ctx, &url)?.into_value()),
                        Err(error) => {
                            Ok(rquickjs::String::from_str(ctx, &error.to_string())?.into_value())
                        }
                    }
                },
            )?,
        )?;
        exports.export(
            "set",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>,
                 href: String,
                 component: String,
                 value: String|
                 -> Result<Array<'js>> {
                    let mut url =
                        Url::parse(&href).map_err(|why| throw(&ctx, &UrlError::Invalid { why }))?;
                    set(&mut url, &component, &value).map_err(|e| throw(&ctx, &e))?;
                    components_array(&ctx, &url)
                },
            )?,
        )?;
        // Pairs as one flat array: name, value, name, value, … Each pair goes straight into the
        // engine (charged to the runtime's memory), never into a list of the host's own.
        exports.export(
            "formParse",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, text: String| -> Result<Array<'js>> {
                    form_within("the form text", &text).map_err(|e| throw(&ctx, &e))?;
                    let out = Array::new(ctx.clone())?;
                    for (i, (name, value)) in
                        url::form_urlencoded::parse(text.as_bytes()).enumerate()
                    {
                        if i % DEADLINE_STRIDE == DEADLINE_STRIDE - 1
                            && crate::deadline::current_expired()
                        {
                            return Err(Exception::throw_message(
                                &ctx,
                                "URLSearchParams: the call's time limit ran out while it was parsing",
                            ));
                        }
                        out.set(2 * i, name.as_ref())?;
                        out.set(2 * i + 1, value.as_ref())?;
                    }
                    Ok(out)
                },
            )?,
        )?;
        exports.export(
            "formEncode",
            Function::new(
                ctx.clone(),
                |ctx: Ctx<'js>, text: String| -> Result<String> {
                    form_encode(&text).map_err(|e| throw(&ctx, &e))
                },
            )?,
        )?;
        exports.export("MAX_URL_UNITS", MAX_URL_UNITS as f64)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn href(input: &str, base: Option<&str>) -> String {
        parse(input, base).expect("parses").to_string()
    }

    #[test]
    fn a_relative_reference_resolves_against_its_base_as_whatwg_says() {
        assert_eq!(href("../a?b#c", Some("http://x/y/z")), "http://x/a?b#c");
        assert_eq!(href("//h/p", Some("https://x/y")), "https://h/p");
        assert_eq!(href("?q", Some("http://x/y/z#f")), "http://x/y/z?q");
    }

    #[test]
    fn hosts_are_lowercased_and_idna_mapped_keeping_the_trailing_dot() {
        let url = parse("http://EXAMPLE.com./", None).expect("parses");
        assert_eq!(components(&url)[6], "example.com.");
        assert_eq!(
            href("http://BÜCHER.example/", None),
            "http://xn--bcher-kva.example/"
        );
    }

    #[test]
    fn an_invalid_url_or_base_is_an_error_that_names_the_reason() {
        assert_eq!(
            parse("no scheme", None)
                .map_err(|e| e.to_string())
                .err()
                .as_deref(),
            Some("Invalid URL: relative URL without a base")
        );
        assert!(matches!(
            parse("a", Some("not a base")),
            Err(UrlError::InvalidBase { .. })
        ));
        assert!(parse("http://exa mple.com/", None).is_err());
    }

    #[test]
    fn setters_other_than_href_leave_the_url_as_it_was_on_a_value_they_cannot_take() {
        let mut url = parse("https://x.test:8080/p", None).expect("parses");
        set(&mut url, "port", "not a port").expect("ignored, not an error");
        assert_eq!(url.as_str(), "https://x.test:8080/p");
        set(&mut url, "port", "443").expect("sets");
        assert_eq!(
            url.as_str(),
            "https://x.test/p",
            "the default port is dropped"
        );
        assert!(set(&mut url, "href", "not a url").is_err());
        assert_eq!(url.as_str(), "https://x.test/p");
    }

    #[test]
    fn a_url_longer_than_chromiums_limit_is_refused_by_parse_and_by_setters() {
        let long = format!("http://x/{}", "a".repeat(MAX_URL_UNITS));
        assert!(matches!(
            parse(&long, None),
            Err(UrlError::UrlTooLong { .. })
        ));
        let mut url = parse("http://x/", None).expect("parses");
        let half = "b".repeat(MAX_URL_UNITS / 2 + 1);
        set(&mut url, "pathname", &half).expect("one half fits");
        assert!(matches!(
            set(&mut url, "search", &half),
            Err(UrlError::UrlTooLong { .. })
        ));
        assert_eq!(
            url.path().len(),
            half.len() + 1,
            "the refused setter changed nothing"
        );
    }

    #[test]
    fn form_names_and_values_are_written_as_application_x_www_form_urlencoded() {
        assert_eq!(form_encode("a b").expect("encodes"), "a+b");
        assert_eq!(
            form_encode("é&=~*!").expect("encodes"),
            "%C3%A9%26%3D%7E*%21"
        );
        assert!(matches!(
            form_encode(&"x".repeat(MAX_FORM_UNITS + 1)),
            Err(UrlError::FormTooLong { .. })
        ));
    }
}
