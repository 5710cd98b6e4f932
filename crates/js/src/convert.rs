//! Moving values between serde_json and QuickJS directly, without JSON text in between: each
//! node is built or read through the engine's object API, which avoids a stringify/parse pair
//! on every call.

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
}

/// The state of one conversion: what is left of the budget, and how to tell the deadline passed.
struct Meter<'a> {
    nodes: usize,
    bytes: usize,
    budget: ConversionBudget,
    expired: &'a dyn Fn() -> bool,
}

impl Meter<'_> {
    fn visit(&mut self, path: &str) -> Result<(), FromJsError> {
        self.nodes += 1;
        if self.nodes > self.budget.nodes {
            return Err(FromJsError::OverBudget(format!(
                "more than {} values (at {})",
                self.budget.nodes,
                shown(path)
            )));
        }
        // The interrupt handler cannot stop Rust code: check the call's deadline here.
        if self.nodes.is_multiple_of(1024) && (self.expired)() {
            return Err(FromJsError::Deadline);
        }
        Ok(())
    }

    fn text(&mut self, len: usize, path: &str) -> Result<(), FromJsError> {
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes > self.budget.bytes {
            return Err(FromJsError::OverBudget(format!(
                "more than {} bytes of text (at {})",
                self.budget.bytes,
                shown(path)
            )));
        }
        Ok(())
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
                object.set(key.as_str(), to_js(ctx, item)?)?;
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

/// Reads a JS value as JSON, with JSON.stringify's rules: `undefined` and functions in objects
/// are dropped, non-finite numbers become null.
pub fn from_js(value: &Value<'_>) -> Result<Json, FromJsError> {
    from_js_within(value, ConversionBudget::OUTPUT, &|| false)
}

/// [`from_js`] within a budget and a deadline.
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
    read(value, 0, &mut String::new(), &mut meter)
}

fn read(
    value: &Value<'_>,
    depth: usize,
    path: &mut String,
    meter: &mut Meter<'_>,
) -> Result<Json, FromJsError> {
    if depth > MAX_DEPTH {
        return Err(FromJsError::TooDeep(shown(path)));
    }
    meter.visit(path)?;
    let engine = |e: rquickjs::Error| FromJsError::Engine(e.to_string());
    Ok(match value.type_of() {
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
                .map_err(engine)?
                .unwrap_or_default();
            meter.text(text.len(), path)?;
            Json::String(text)
        }
        Type::Array => {
            let array = value
                .as_array()
                .ok_or_else(|| FromJsError::Engine("array expected".into()))?;
            let mut out = Vec::with_capacity(array.len());
            for (i, item) in array.iter::<Value>().enumerate() {
                let item = item.map_err(engine)?;
                let len = path.len();
                // Written in place: no string allocated per element.
                let _ = write!(path, "[{i}]");
                out.push(match item.type_of() {
                    Type::Undefined | Type::Function | Type::Constructor | Type::Symbol => {
                        Json::Null
                    }
                    _ => read(&item, depth + 1, path, meter)?,
                });
                path.truncate(len);
            }
            Json::Array(out)
        }
        Type::Object | Type::Exception | Type::Proxy => {
            let object = value
                .as_object()
                .ok_or_else(|| FromJsError::Engine("object expected".into()))?;
            let props = object.props::<String, Value>();
            let mut out = Map::with_capacity(props.len());
            for prop in props {
                let (key, item) = prop.map_err(engine)?;
                if matches!(
                    item.type_of(),
                    Type::Undefined | Type::Function | Type::Constructor | Type::Symbol
                ) {
                    continue;
                }
                meter.text(key.len(), path)?;
                let len = path.len();
                path.push('.');
                path.push_str(&key);
                let item = read(&item, depth + 1, path, meter)?;
                path.truncate(len);
                out.insert(key, item);
            }
            Json::Object(out)
        }
        Type::Promise => {
            return Err(FromJsError::Unsupported {
                kind: "promise",
                path: shown(path),
            });
        }
        Type::BigInt => {
            return Err(FromJsError::Unsupported {
                kind: "BigInt",
                path: shown(path),
            });
        }
        Type::Function | Type::Constructor => {
            return Err(FromJsError::Unsupported {
                kind: "function",
                path: shown(path),
            });
        }
        Type::Symbol => {
            return Err(FromJsError::Unsupported {
                kind: "symbol",
                path: shown(path),
            });
        }
        Type::Module | Type::Unknown => {
            return Err(FromJsError::Unsupported {
                kind: "engine value",
                path: shown(path),
            });
        }
    })
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        "(root)".into()
    } else {
        format!("(root){path}")
    }
}
