//! Opening a file at a line and column in the author's editor: `COVEL_EDITOR` (a command with
//! `{file}`, `{line}` and `{col}`, e.g. `code --goto {file}:{line}:{col}`), else `$VISUAL`,
//! else `$EDITOR`, whose usual programs are known (VS Code, Zed, Sublime Text, the JetBrains
//! IDEs, Emacs, and Vim, Neovim, Helix, nano and micro in a terminal window).

use std::path::Path;

/// A program and its arguments (never through a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorCommand {
    pub program: String,
    pub args: Vec<String>,
}

impl EditorCommand {
    /// The command as the author would type it (for messages).
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .map(|word| {
                shlex::try_quote(word).map_or_else(|_| word.to_string(), |q| q.into_owned())
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Editors that run in a terminal: started in one (`$TERMINAL`, else `x-terminal-emulator`).
const TERMINAL_EDITORS: &[&str] = &["vim", "vi", "nvim", "hx", "helix", "nano", "micro", "kak"];

/// The command that opens `file` at `line`:`column` with `editor` (a `COVEL_EDITOR` pattern
/// or a `$VISUAL`/`$EDITOR` value).
pub fn command_for(
    editor: &str,
    file: &Path,
    line: u32,
    column: u32,
) -> Result<EditorCommand, String> {
    let words = shlex::split(editor)
        .filter(|w| !w.is_empty())
        .ok_or_else(|| {
            format!("the editor command `{editor}` cannot be read (unbalanced quotes)")
        })?;
    let file_text = file.display().to_string();
    let fill = |word: &str| {
        word.replace("{file}", &file_text)
            .replace("{line}", &line.to_string())
            .replace("{col}", &column.to_string())
    };
    let (program, given) = words
        .split_first()
        .map(|(p, rest)| (p.clone(), rest.to_vec()))
        .unwrap_or_default();
    if editor.contains("{file}") {
        return Ok(EditorCommand {
            program: fill(&program),
            args: given.iter().map(|w| fill(w)).collect(),
        });
    }
    let name = Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let at = format!("{file_text}:{line}:{column}");
    let mut args = given;
    match name.as_str() {
        "code" | "code-insiders" | "codium" | "cursor" => args.extend(["--goto".into(), at]),
        "zed" | "zeditor" | "subl" | "sublime_text" => args.push(at),
        "idea" | "idea.sh" | "webstorm" | "webstorm.sh" | "pycharm" | "rustrover" | "clion"
        | "goland" | "phpstorm" => {
            args.extend([
                "--line".into(),
                line.to_string(),
                "--column".into(),
                column.to_string(),
                file_text,
            ]);
        }
        "emacs" | "emacsclient" => args.extend([format!("+{line}:{column}"), file_text]),
        "vim" | "vi" | "nvim" | "kak" => {
            args.extend([format!("+call cursor({line}, {column})"), file_text])
        }
        "hx" | "helix" | "micro" => args.push(at),
        "nano" => args.extend([format!("+{line},{column}"), file_text]),
        _ => args.push(file_text),
    }
    if TERMINAL_EDITORS.contains(&name.as_str()) {
        let terminal = std::env::var("TERMINAL").unwrap_or_else(|_| "x-terminal-emulator".into());
        let mut wrapped = vec!["-e".to_string(), program];
        wrapped.extend(args);
        return Ok(EditorCommand {
            program: terminal,
            args: wrapped,
        });
    }
    Ok(EditorCommand { program, args })
}

/// The editor the environment names: `COVEL_EDITOR`, else `$VISUAL`, else `$EDITOR`.
pub fn configured() -> Option<String> {
    ["COVEL_EDITOR", "VISUAL", "EDITOR"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
}

/// Opens `file` at `line`:`column` in the configured editor (the process is left to run);
/// returns the command run.
pub fn open(file: &Path, line: u32, column: u32) -> Result<String, String> {
    let editor = configured().ok_or(
        "no editor is set: set COVEL_EDITOR (for example `code --goto {file}:{line}:{col}`), or $VISUAL or $EDITOR",
    )?;
    let command = command_for(&editor, file, line.max(1), column.max(1))?;
    std::process::Command::new(&command.program)
        .args(&command.args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", command.display()))?;
    Ok(command.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(editor: &str) -> Vec<String> {
        let command = command_for(editor, Path::new("/p/a b.js"), 4, 33).expect("a command");
        std::iter::once(command.program)
            .chain(command.args)
            .collect()
    }

    #[test]
    fn a_pattern_fills_in_the_file_line_and_column() {
        assert_eq!(
            run("my-editor --at {file}:{line}:{col}"),
            ["my-editor", "--at", "/p/a b.js:4:33"]
        );
        assert_eq!(
            run("'/opt/my ed' {file} -l {line}"),
            ["/opt/my ed", "/p/a b.js", "-l", "4"]
        );
    }

    #[test]
    fn the_usual_editors_are_known() {
        assert_eq!(
            run("code --wait"),
            ["code", "--wait", "--goto", "/p/a b.js:4:33"]
        );
        assert_eq!(run("/usr/bin/zed"), ["/usr/bin/zed", "/p/a b.js:4:33"]);
        assert_eq!(
            run("idea"),
            ["idea", "--line", "4", "--column", "33", "/p/a b.js"]
        );
        assert_eq!(run("emacs"), ["emacs", "+4:33", "/p/a b.js"]);
        let vim = run("nvim");
        assert_eq!(
            &vim[1..],
            ["-e", "nvim", "+call cursor(4, 33)", "/p/a b.js"],
            "in a terminal"
        );
        assert_eq!(run("gedit"), ["gedit", "/p/a b.js"]);
    }

    #[test]
    fn an_unreadable_command_says_so() {
        assert!(command_for("code 'unclosed", Path::new("a"), 1, 1).is_err());
    }
}
