//! Moving values between serde_json and QuickJS directly, without JSON text in between: each
//! node is built or read through the engine's object API, which avoids a stringify/parse pair
//! on every call.

use rquickjs::object::Property;
use rquickjs::{Array, Ctx, Object, Type, Value};
use serde_json::{Map, Number, Value as Json};
use std::fmt::Write as _;

/// Values nest deeper than this are treated as cyclic and refused.
const MAX_DEPTH: usize = 128;

/// How much of a value crosses from the engine: shared references count once per visit, so a
/// value built as `a = [a, a]` twenty times cannot expand into gigabytes on the Rust side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversionBudget {
    /// Values (nodes) at most.
    pub nodes: usize,
    /// Bytes of strings and keys at most.
    pub bytes: usize,
}

impl ConversionBudget {
    /// The budget of one handler output: 100 000 values and 4 MiB of text.
    pub const OUTPUT: ConversionBudget = ConversionBudget {
        nodes: 100_000,
        bytes: 4 * 1024 * 1024,
    };

    /// What one call's end reads back: at most 51 log lines of about 2 000 characters.
    pub const CALL_LOGS: ConversionBudget = ConversionBudget {
        nodes: 64,
        bytes: 256 * 1024,
    };

    /// What a load reads back (its registrations, each with a stack of at most 64 KiB).
    pub const REGISTRATIONS: ConversionBudget = ConversionBudget {
        nodes: 100_000,
        bytes: 16 * 1024 * 1024,
    };

    /// A thrown value that is not an error, read for its message.
    pub const THROWN: ConversionBudget = ConversionBudget {
        nodes: 1_000,
        bytes: 64 * 1024,
    };
}

/// The state of one conversion: what is left of the budget, and how to tell the deadline passed.
struct Meter<'a> {
    nodes: usize,
    bytes: usize,
    budget: ConversionBudget,
    expired: &'a dyn Fn() -> bool,
}

impl Meter<'_> {
    fn visit(&mut self) -> Result<(), Refusal> {
        self.nodes += 1;
        if self.nodes > self.budget.nodes {
            return Err(Refusal::new(Refused::Nodes(self.budget.nodes)));
        }
        // The interrupt handler cannot stop Rust code: check the call's deadline here.
        if self.nodes.is_multiple_of(1024) && (self.expired)() {
            return Err(Refusal::new(Refused::Deadline));
        }
        Ok(())
    }

    fn text(&mut self, len: usize) -> Result<(), Refusal> {
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes > self.budget.bytes {
            return Err(Refusal::new(Refused::Bytes(self.budget.bytes)));
        }
        Ok(())
    }
}

/// Why a conversion stopped, before its place in the value is known.
enum Refused {
    TooDeep,
    Unsupported(&'static str),
    Nodes(usize),
    Bytes(usize),
    Engine(String),
    Deadline,
}

/// One step from a value to a child: an array index or an object key.
enum Step {
    Index(usize),
    Key(String),
}

/// A refusal and the way back to the root, collected while the reading unwinds: the path of
/// the value being read is only spelled out when something is refused, not kept on every node.
struct Refusal {
    why: Refused,
    /// Innermost step first.
    steps: Vec<Step>,
}

impl Refusal {
    fn new(why: Refused) -> Refusal {
        Refusal {
            why,
            steps: Vec::new(),
        }
    }

    fn engine(error: rquickjs::Error) -> Refusal {
        Refusal::new(Refused::Engine(error.to_string()))
    }

    /// The same refusal, one step further from the root.
    fn under(mut self, step: Step) -> Refusal {
        self.steps.push(step);
        self
    }

    fn into_error(self) -> FromJsError {
        let mut path = String::new();
        for step in self.steps.iter().rev() {
            let _ = match step {
                Step::Index(i) => write!(path, "[{i}]"),
                Step::Key(key) => write!(path, ".{key}"),
            };
        }
        let at = shown(&path);
        match self.why {
            Refused::TooDeep => FromJsError::TooDeep(at),
            Refused::Unsupported(kind) => FromJsError::Unsupported { kind, path: at },
            Refused::Nodes(limit) => {
                FromJsError::OverBudget(format!("more than {limit} values (at {at})"))
            }
            Refused::Bytes(limit) => {
                FromJsError::OverBudget(format!("more than {limit} bytes of text (at {at})"))
            }
            Refused::Engine(message) => FromJsError::Engine(message),
            Refused::Deadline => FromJsError::Deadline,
        }
    }
}

/// Builds a JS value from JSON.
pub fn to_js<'js>(ctx: &Ctx<'js>, value: &Json) -> rquickjs::Result<Value<'js>> {
    Ok(match value {
        Json::Null => Value::new_null(ctx.clone()),
        Json::Bool(b) => Value::new_bool(ctx.clone(), *b),
        Json::Number(n) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
            Some(i) => Value::new_int(ctx.clone(), i),
            None => Value::new_float(ctx.clone(), n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => rquickjs::String::from_str(ctx.clone(), s)?.into_value(),
        Json::Array(items) => {
            let array = Array::new(ctx.clone())?;
            for (i, item) in items.iter().enumerate() {
                array.set(i, to_js(ctx, item)?)?;
            }
            array.into_value()
        }
        Json::Object(map) => {
            let object = Object::new(ctx.clone())?;
            for (key, item) in map {
                let item = to_js(ctx, item)?;
                if key == "__proto__" {
                    // Defined, as `JSON.parse` does: assigned, it would replace the object's
                    // prototype and the key would be gone. (Assignment stays for every other key:
                    // defining costs about a fifth more per key.)
                    object.prop(
                        key.as_str(),
                        Property::from(item).writable().enumerable().configurable(),
                    )?;
                } else {
                    object.set(key.as_str(), item)?;
                }
            }
            object.into_value()
        }
    })
}

/// Why a JS value cannot become JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FromJsError {
    #[error("value nests deeper than {MAX_DEPTH} levels (cyclic?) at {0}")]
    TooDeep(String),
    #[error("a {kind} at {path} cannot be returned from a handler")]
    Unsupported { kind: &'static str, path: String },
    #[error("engine error while reading the value: {0}")]
    Engine(String),
    #[error("the value is over the conversion budget: {0}")]
    OverBudget(String),
    #[error("the call's deadline passed while its value was being read")]
    Deadline,
}

/// Reads a JS value as JSON, with JSON.stringify's rules (`undefined` and functions in objects
/// are dropped, non-finite numbers become null), within a budget and a deadline: the one reader
/// of values out of an engine. Every element counts against the budget, holes included, an
/// array's `length` is never trusted, and the deadline is checked as it goes (a getter or a
/// proxy trap it runs is plugin code, which the engine's interrupt handler stops past it).
pub fn from_js_within(
    value: &Value<'_>,
    budget: ConversionBudget,
    expired: &dyn Fn() -> bool,
) -> Result<Json, FromJsError> {
    let mut meter = Meter {
        nodes: 0,
        bytes: 0,
        budget,
        expired,
    };
    read(value, value.type_of(), 0, &mut meter).map_err(Refusal::into_error)
}

/// Whether a value of this type is left out of an object (and is null in an array), as
/// `JSON.stringify` does.
fn left_out(kind: Type) -> bool {
    matches!(
        kind,
        Type::Undefined | Type::Function | Type::Constructor | Type::Symbol
    )
}

/// Reads one value of type `kind` (its parent already asked the engine for it).
fn read(
    value: &Value<'_>,
    kind: Type,
    depth: usize,
    meter: &mut Meter<'_>,
) -> Result<Json, Refusal> {
    if depth > MAX_DEPTH {
        return Err(Refusal::new(Refused::TooDeep));
    }
    meter.visit()?;
    Ok(match kind {
        Type::Uninitialized | Type::Undefined | Type::Null => Json::Null,
        Type::Bool => Json::Bool(value.as_bool().unwrap_or_default()),
        Type::Int => Json::Number(value.as_int().unwrap_or_default().into()),
        Type::Float => value
            .as_float()
            .and_then(Number::from_f64)
            .map_or(Json::Null, Json::Number),
        Type::String => {
            let text = value
                .as_string()
                .map(|s| s.to_string())
                .transpose()
                .map_err(Refusal::engine)?
                .unwrap_or_default();
            meter.text(text.len())?;
            Json::String(text)
        }
        Type::Array => {
            let array = value
                .as_object()
                .ok_or_else(|| Refusal::new(Refused::Engine("array expected".into())))?;
            // `length` is read as the value it is, never trusted: it can be 2**32 - 1 over a
            // handful of elements (holes), and each index up to it counts against the budget.
            let length = array_length(array)?;
            if length > meter.budget.nodes.saturating_sub(meter.nodes) {
                return Err(Refusal::new(Refused::Nodes(meter.budget.nodes)));
            }
            let mut out = Vec::with_capacity(length.min(1024));
            for i in 0..length {
                let index = u32::try_from(i).unwrap_or(u32::MAX);
                let item: Value = array.get(index).map_err(Refusal::engine)?;
                let kind = item.type_of();
                out.push(if left_out(kind) {
                    // A hole, `undefined` or a function is a value read all the same.
                    meter.visit().map_err(|r| r.under(Step::Index(i)))?;
                    Json::Null
                } else {
                    read(&item, kind, depth + 1, meter).map_err(|r| r.under(Step::Index(i)))?
                });
            }
            Json::Array(out)
        }
        Type::Object | Type::Exception | Type::Proxy => {
            let object = value
                .as_object()
                .ok_or_else(|| Refusal::new(Refused::Engine("object expected".into())))?;
            let props = object.props::<String, Value>();
            let mut out = Map::with_capacity(props.len());
            for prop in props {
                let (key, item) = prop.map_err(Refusal::engine)?;
                let kind = item.type_of();
                if left_out(kind) {
                    meter.visit().map_err(|r| r.under(Step::Key(key.clone())))?;
                    continue;
                }
                meter.text(key.len())?;
                match read(&item, kind, depth + 1, meter) {
                    Ok(item) => {
                        out.insert(key, item);
                    }
                    Err(refusal) => return Err(refusal.under(Step::Key(key))),
                }
            }
            Json::Object(out)
        }
        Type::Promise => return Err(Refusal::new(Refused::Unsupported("promise"))),
        Type::BigInt => return Err(Refusal::new(Refused::Unsupported("BigInt"))),
        Type::Function | Type::Constructor => {
            return Err(Refusal::new(Refused::Unsupported("function")));
        }
        Type::Symbol => return Err(Refusal::new(Refused::Unsupported("symbol"))),
        Type::Module | Type::Unknown => {
            return Err(Refusal::new(Refused::Unsupported("engine value")));
        }
    })
}

/// The elements of a JS array handed to a host function, at most `limit` of them, read while
/// the running code's deadline holds (holes read as `undefined`). Anything but an array, and
/// an array longer than `limit`, is refused with a message for the plugin's author.
pub fn array_items<'js>(value: &Value<'js>, limit: usize) -> Result<Vec<Value<'js>>, String> {
    let array = value
        .as_object()
        .filter(|_| value.is_array())
        .ok_or_else(|| "an array was expected".to_string())?;
    let length = array_length(array).map_err(|r| r.into_error().to_string())?;
    if length > limit {
        return Err(format!("an array of more than {limit} elements"));
    }
    let mut out = Vec::with_capacity(length.min(1024));
    for i in 0..length {
        if i % 4096 == 4095 && crate::deadline::current_expired() {
            return Err(FromJsError::Deadline.to_string());
        }
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        out.push(array.get(index).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// An array's `length` as the engine holds it: a whole number from 0 to 2**32 - 1, as an
/// integer or, past 2**31 - 1, as a float (reading it as an `i32`, as `Array::len` does, is an
/// assertion that fails there). A proxy's `length` is whatever its trap answered.
fn array_length(array: &Object<'_>) -> Result<usize, Refusal> {
    let length: Value = array.get("length").map_err(Refusal::engine)?;
    let whole = match length.type_of() {
        Type::Int => length.as_int().map(f64::from),
        Type::Float => length.as_float(),
        _ => None,
    };
    match whole {
        // `as` saturates: anything that large is over every budget anyway.
        Some(n) if n.is_finite() && n >= 0.0 => Ok(n as usize),
        _ => Err(Refusal::new(Refused::Engine(
            "an array whose length is not a whole number".into(),
        ))),
    }
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        "(root)".into()
    } else {
        format!("(root){path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rquickjs::{Context, Runtime};

    /// Evaluates `source` and reads its value within `budget`.
    fn read_of(source: &str, budget: ConversionBudget) -> Result<Json, FromJsError> {
        let runtime = Runtime::new().expect("runtime");
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            let value: Value = ctx.eval(source).expect("the source evaluates");
            from_js_within(&value, budget, &|| false)
        })
    }

    fn read_output(source: &str) -> Result<Json, FromJsError> {
        read_of(source, ConversionBudget::OUTPUT)
    }

    #[test]
    fn a_refused_value_is_named_by_its_path_from_the_root() {
        assert_eq!(
            read_output("({ list: [1, { deep: Promise.resolve(1) }] })"),
            Err(FromJsError::Unsupported {
                kind: "promise",
                path: "(root).list[1].deep".into()
            })
        );
        assert_eq!(
            read_output("10n"),
            Err(FromJsError::Unsupported {
                kind: "BigInt",
                path: "(root)".into()
            })
        );
    }

    #[test]
    fn a_budget_overrun_names_where_it_happened() {
        let budget = ConversionBudget {
            nodes: 3,
            bytes: 1024,
        };
        assert_eq!(
            read_of("({ a: 1, b: [2, 3] })", budget),
            Err(FromJsError::OverBudget(
                "more than 3 values (at (root).b)".into()
            )),
            "an array longer than what is left of the budget is refused before it is walked"
        );
        let budget = ConversionBudget {
            nodes: 100,
            bytes: 8,
        };
        assert_eq!(
            read_of("[{ k: 'long text' }]", budget),
            Err(FromJsError::OverBudget(
                "more than 8 bytes of text (at (root)[0].k)".into()
            ))
        );
    }

    #[test]
    fn an_array_length_is_never_trusted_and_holes_count() {
        for source in [
            "(() => { const a = []; a.length = 2 ** 31; return a; })()",
            "(() => { const a = [1]; a.length = 2 ** 32 - 1; return a; })()",
            "(() => { const a = []; a.length = 5e7; return { a }; })()",
        ] {
            assert!(
                matches!(read_output(source), Err(FromJsError::OverBudget(_))),
                "{source}"
            );
        }
        let budget = ConversionBudget {
            nodes: 5,
            bytes: 1024,
        };
        // Four holes and `undefined`s are four values read, as many as four numbers.
        assert!(read_of("[, undefined, , () => 1]", budget).is_ok());
        assert!(matches!(
            read_of("[[, undefined, , () => 1, 1]]", budget),
            Err(FromJsError::OverBudget(_))
        ));
        assert!(matches!(
            read_of(
                "({ a: undefined, b: undefined, c: undefined, d: undefined, e: 1 })",
                budget
            ),
            Err(FromJsError::OverBudget(_))
        ));
    }

    #[test]
    fn a_key_named_proto_stays_an_own_property_as_json_parse_makes_it() {
        let runtime = Runtime::new().expect("runtime");
        let context = Context::full(&runtime).expect("context");
        context.with(|ctx| {
            let input = serde_json::json!({"__proto__": {"polluted": true}, "a": 1});
            let value = to_js(&ctx, &input).expect("converts");
            let probe: rquickjs::Function = ctx
                .eval("(v) => JSON.stringify([Object.keys(v), v.polluted === undefined, Object.getPrototypeOf(v) === Object.prototype])")
                .expect("probe");
            let seen: String = probe.call((value.clone(),)).expect("runs");
            assert_eq!(seen, r#"[["__proto__","a"],true,true]"#);
            assert_eq!(
                from_js_within(&value, ConversionBudget::OUTPUT, &|| false),
                Ok(input),
                "and it reads back the same"
            );
        });
    }

    #[test]
    fn undefined_functions_and_symbols_are_left_out_of_objects_and_null_in_arrays() {
        assert_eq!(
            read_output("({ a: undefined, f() {}, s: Symbol('s'), n: NaN, kept: 'yes' })"),
            Ok(serde_json::json!({"n": null, "kept": "yes"}))
        );
        assert_eq!(
            read_output("[undefined, () => 1, Symbol('s'), 2.5]"),
            Ok(serde_json::json!([null, null, null, 2.5]))
        );
    }
}
