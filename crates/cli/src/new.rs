//! `covel new`: starts a plugin in one step (`covel_studio::scaffold`).

use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The plugin's id: lower-case letters, digits and dashes, starting with a letter.
    pub id: String,
    /// An extension point to provide: `prompt.segment@1` (the default) or `ui.slot@1:SLOT`
    /// (`stage.backdrop@1`, `stage.choices@1`, `stage.music@1`); repeat for several.
    #[arg(long = "point")]
    pub points: Vec<String>,
    /// Write the entry in TypeScript (`server/index.ts`).
    #[arg(long)]
    pub ts: bool,
    /// The plugins folder to create it in (default: the current folder).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

pub fn run(args: &Args) -> anyhow::Result<std::process::ExitCode> {
    let created = covel_studio::scaffold::create(&args.dir, &args.id, &args.points, args.ts)
        .map_err(anyhow::Error::msg)?;
    crate::say!("created {}", created.folder.display());
    crate::say!("  PLUGIN.md, {}, README.md", created.entry);
    crate::say!("created {}", created.session.display());
    crate::say!(
        "next: covel validate {dir} · covel test {dir} --update, then --review (writes the test's golden snapshot) · covel-studio {dir}",
        dir = args.dir.display()
    );
    Ok(std::process::ExitCode::SUCCESS)
}
