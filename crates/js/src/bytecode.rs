//! Shared bytecode for the modules the binary serves (zod, the SDK, the Node built-ins):
//! compiled once per process by the first runtime that imports one, then loaded by every other
//! runtime from the same bytes, which is much cheaper than parsing the source again.

use rquickjs::module::{Declared, WriteOptions};
use rquickjs::{Ctx, Module, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Declares an embedded module by name, through the process-wide bytecode cache.
pub fn declare_shared<'js>(
    ctx: &Ctx<'js>,
    name: &str,
    source: &str,
) -> Result<Module<'js, Declared>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<SharedBytecode>>>> = OnceLock::new();
    let entry = {
        let mut cache = CACHE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(cache.entry(name.to_string()).or_default())
    };
    entry.declare(ctx, name, source)
}

/// Bytecode compiled from one embedded source.
pub struct SharedBytecode {
    cell: OnceLock<Vec<u8>>,
}

impl SharedBytecode {
    pub const fn new() -> Self {
        SharedBytecode {
            cell: OnceLock::new(),
        }
    }

    /// Declares the module `name` from `source`, from the shared bytecode when it exists.
    pub fn declare<'js>(
        &self,
        ctx: &Ctx<'js>,
        name: &str,
        source: &str,
    ) -> Result<Module<'js, Declared>> {
        if let Some(bytes) = self.cell.get() {
            return load(ctx, bytes);
        }
        let module = Module::declare(ctx.clone(), name, source)?;
        // Source stays out of the bytecode (stack traces keep line numbers through debug info).
        if let Ok(bytes) = module.write(WriteOptions {
            strip_source: true,
            ..WriteOptions::default()
        }) {
            let _ = self.cell.set(bytes);
        }
        Ok(module)
    }
}

impl Default for SharedBytecode {
    fn default() -> Self {
        Self::new()
    }
}

#[allow(unsafe_code)]
fn load<'js>(ctx: &Ctx<'js>, bytes: &[u8]) -> Result<Module<'js, Declared>> {
    // SAFETY: the bytes were written by `Module::write` in this process, from a module that this
    // same QuickJS build compiled; they are never read from disk or from plugin code.
    unsafe { Module::load(ctx.clone(), bytes) }
}
