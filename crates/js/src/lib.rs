//! covel-js: runs Covel plugin code in QuickJS.
//!
//! Each plugin gets its own runtime ([`engine`]; `Send`, its calls run one at a time on the
//! calling thread; the kernel's runner calls different plugins in parallel, see [`host`]), with a
//! memory limit, an interrupt-based CPU deadline and a promise deadline. Modules resolve only inside the plugin
//! root plus the SDK (`@covel/plugin-handlers-utils`, [`modules`]); values cross the boundary
//! through the engine's object API, not JSON text ([`convert`]). [`host`] loads plugin folders
//! and exposes their providers to the kernel's runner.

pub mod bytecode;
pub mod convert;
pub mod deadline;
pub mod engine;
pub mod host;
pub mod http;
pub mod imports;
pub mod intl;
pub mod intrinsics;
pub mod lint;
pub mod memo;
pub mod memory;
pub mod modules;
pub mod sdk_tests;
pub mod syntax;
pub mod typescript;
pub mod whatwg_url;

pub use engine::{Limits, RuntimeWatch};
pub use host::{
    JsPlugin, LoadedPlugin, close_plugins, load_folder, load_plugin, load_plugins,
    load_plugins_with,
};
