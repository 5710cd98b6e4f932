// End-to-end tests of the real desktop window: tauri-driver + WebKitWebDriver under Xvfb.
// Needs `cargo build -p covel-studio-app` (with ui/dist built), `tauri-driver` on PATH and a
// DISPLAY; scripts/test provides all three.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { copyFile, cp, mkdtemp, mkdir, readFile, writeFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { remote } from "webdriverio";
import { saveWindowShot } from "./window-shot.mjs";

const repo = resolve(import.meta.dirname, "../../..");
const app = process.env.COVEL_STUDIO_BIN ?? join(repo, "target/debug/covel-studio");
const shots = resolve(import.meta.dirname, "../../test-results");
let driver;
let browser;
let folder;
// The WebDriver ports, free ones found at start (another suite on the machine may hold 4444).
let port;
let nativePort;
// The app's config, state and data folders (its Recent list, its log) in a scratch folder, so
// the tests never write into the real user's.
let home;
// The author's editor is a script that writes what it was asked to open (see the broken-edit test).
const isolated = () => ({ ...process.env, XDG_CONFIG_HOME: join(home, "config"), XDG_STATE_HOME: join(home, "state"), XDG_DATA_HOME: join(home, "data"), COVEL_EDITOR: `${join(home, "fake-editor.sh")} --goto {file}:{line}:{col}` });

async function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port: free } = server.address();
      server.close(() => done(free));
    });
  });
}

async function waitFor(description, check, timeout = 20000) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${description}${last ? `: ${last.message}` : ""}`);
}

async function tab(name) {
  await (await browser.$(`[data-tab="${name}"]`)).click();
}

async function open(args) {
  return remote({
    hostname: "127.0.0.1",
    port,
    logLevel: "error",
    capabilities: { "tauri:options": { application: app, args }, "wdio:enforceWebDriverClassic": true },
  });
}

// Screenshots land in test-results/; with COVEL_README_SHOTS=1 the ones the README shows are
// written to docs/ as well, so they are captured from the real window and never go stale.
async function shot(name, readme) {
  await capture(join(shots, `${name}.png`));
  if (readme && process.env.COVEL_README_SHOTS) await copyFile(join(shots, `${name}.png`), join(repo, "docs", `screenshot-${readme}.png`));
}

// The window as the X server holds it (window-shot.mjs says why not WebDriver's screenshot),
// once the page has painted its latest state: the X copy is taken at once, without waiting.
async function capture(file) {
  // The pointer left where the last click was can open the web view's native tooltip, a window
  // of its own that the dump of this window shows as a black box: move it off anything first.
  await browser.action("pointer").move({ x: 2, y: 2, origin: "viewport" }).perform();
  await browser.executeAsync((done) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 30))));
  await saveWindowShot("Covel Studio", file);
}

// How long a click takes until the next frame is painted, measured in the window (reported, not asserted).
async function timeClick(selector) {
  return browser.executeAsync((sel, done) => {
    const start = performance.now();
    document.querySelector(sel).click();
    requestAnimationFrame(() => setTimeout(() => done(performance.now() - start), 0));
  }, selector);
}

async function text(selector) {
  return (await browser.$(selector)).getText();
}

async function edit(relative, from, to) {
  const path = join(folder, relative);
  const text = await readFile(path, "utf8");
  assert.ok(text.includes(from), `${from} in ${relative}`);
  await writeFile(path, text.replace(from, to));
}

before(async () => {
  folder = await mkdtemp(join(tmpdir(), "covel-e2e-"));
  await cp(join(repo, "plugins-sample"), folder, { recursive: true });
  await mkdir(shots, { recursive: true });
  // Its own process group, with its output piped through: a window that outlived its WebDriver
  // session kept the inherited output open, and the test runner waited for it forever.
  home = await mkdtemp(join(tmpdir(), "covel-e2e-home-"));
  await writeFile(join(home, "fake-editor.sh"), `#!/bin/sh\nprintf '%s\\n' "$@" > "${join(home, "editor-args")}"\n`, { mode: 0o755 });
  port = await freePort();
  nativePort = await freePort();
  driver = spawn("tauri-driver", ["--port", String(port), "--native-port", String(nativePort)], { stdio: ["ignore", "pipe", "pipe"], detached: true, env: isolated() });
  driver.stdout.pipe(process.stdout);
  driver.stderr.pipe(process.stderr);
  await new Promise((r) => setTimeout(r, 1500));
  browser = await open([folder, "--session", join(folder, "demo.session.yaml")]);
  await waitFor("the prompt panel", async () => (await browser.$$('[data-testid="cache-boundary"]')).length === 3);
});

after(async () => {
  await browser?.deleteSession().catch(() => {});
  if (driver) {
    // tauri-driver, WebKitWebDriver and every window they started share the group: end them all.
    try {
      process.kill(-driver.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
    driver.stdout.destroy();
    driver.stderr.destroy();
  }
  await rm(folder, { recursive: true, force: true });
  if (home) await rm(home, { recursive: true, force: true });
});

test("the studio opens on plugins-sample and shows the prompt with its cache boundaries", async () => {
  const boundaries = await browser.$$('[data-testid="cache-boundary"]');
  assert.equal(boundaries.length, 3);
  assert.match(await boundaries[0].getText(), /cache boundary 0/);
  assert.match(await (await browser.$('[data-segment="story-director/tone"]')).getText(), /grave, unhurried/);
  await shot("e2e-prompt", "prompt");
  const timings = [];
  for (const name of ["Plugins", "Providers", "Stage", "Problems", "Prompt"]) timings.push(`${name} ${(await timeClick(`[data-tab="${name}"]`)).toFixed(1)} ms`);
  console.log(`# panel switches in the window (plugins-sample): ${timings.join(", ")}`);
});

test("editing a sample plugin's file on disk updates the prompt panel", async () => {
  await edit("story-director/server/lib/text.js", "grave, unhurried", "grave, patient");
  await waitFor("the new tone", async () => /grave, patient/.test(await (await browser.$('[data-segment="story-director/tone"]')).getText()));
  assert.ok(await (await browser.$('.changed[data-segment="story-director/tone"]')).isExisting(), "the change is highlighted");
  assert.match(await text('[data-testid="reload-note"]'), /last reload: 1 path · \d+ ms/, "the header counts the paths");
  console.log(`# the reload in the window: ${await text('[data-testid="reload-note"]')}`);
  // Scrolled into view first: the toggle sits below the fold of a 920 px window, and with a
  // release build the click's own scrolling left it "not interactable".
  const toggle = await browser.$('[data-testid="system-prompt"] [data-segment="story-director/tone"] [data-testid="diff-toggle"]');
  await toggle.scrollIntoView({ block: "center" });
  await toggle.click();
  assert.match(await text('[data-testid="segment-diff"]'), /unhurried/);
  assert.equal((await (await browser.$('[data-testid="segment-diff"] ins')).getText()).trim(), "patient");
  await browser.execute(() => document.querySelector('[data-testid="segment-diff"]').scrollIntoView({ block: "center" }));
  await shot("e2e-reload", "prompt-diff");
  // The request bodies do not cross with the prompt: the shell answers them when shown, for
  // the prompt after the reload.
  const show = await browser.$('[data-testid="show-requests"]');
  await show.scrollIntoView({ block: "center" });
  await show.click();
  const curl = await browser.$('[data-testid="copy-curl-anthropic"]');
  await curl.waitForExist({ timeout: 10000 });
  await curl.scrollIntoView({ block: "center" });
  await curl.click();
  const copied = await browser.execute(() => window.__lastCopied);
  assert.match(copied, /^curl https:\/\/api\.anthropic\.com\/v1\/messages/);
  assert.ok(copied.includes("grave, patient") && !copied.includes("grave, unhurried"), "the body of the prompt after the reload");
});

test("a broken edit shows the diagnostic and keeps the last good result", async () => {
  await edit("story-director/server/index.js", "export default function (covel) {", "export default function (covel) {{");
  await tab("Plugins");
  await waitFor("the last-good status", async () => (await (await browser.$('[data-testid="status-story-director"]')).getText()) === "last-good");
  const diagnostics = await browser.$$('[data-testid="diagnostic"]');
  assert.ok(diagnostics.length >= 1);
  assert.match(await diagnostics[0].getText(), /entry-syntax/);
  await capture(join(shots, "e2e-broken.png"));
  await tab("Problems");
  await waitFor("the problem", async () => /entry-syntax.*last good version/s.test(await text('[data-testid="problems"]')));
  assert.equal((await browser.$$('[data-testid="problem"][data-code="entry-syntax"]')).length, 1, "listed once");
  assert.ok(Number(await text('[data-testid="count-Plugins"]')) >= 1, "a badge on the Plugins tab");
  // One click opens the file at the token that broke it, in the author's editor.
  await (await browser.$('[data-testid="problem"][data-code="entry-syntax"] [data-testid="open-in-editor"]')).click();
  await waitFor("the editor's arguments", async () => /index\.js:4:33/.test(await readFile(join(home, "editor-args"), "utf8").catch(() => "")));
  assert.deepEqual((await readFile(join(home, "editor-args"), "utf8")).trim().split("\n"), ["--goto", `${join(folder, "story-director/server/index.js")}:4:33`]);
  await shot("e2e-problems", "problems");
  await tab("Prompt");
  assert.match(await (await browser.$('[data-segment="story-director/tone"]')).getText(), /grave, patient/, "the last good version still runs");
  assert.match(await text('[data-testid="prompt-warning"][data-kind="last-good"]'), /story-director runs its last good version/, "the Prompt panel says so");
  await edit("story-director/server/index.js", "export default function (covel) {{", "export default function (covel) {");
  await tab("Plugins");
  await waitFor("the fixed status", async () => (await (await browser.$('[data-testid="status-story-director"]')).getText()) === "active");
});

test("three scripted turns of the demo change the stage each turn, and the inspector shows their hooks and tools", async () => {
  await tab("Stage");
  const before = await text('[data-testid="dialog"]');
  assert.match(await text('[data-testid="backdrop"]'), /The Harbour/);
  // What each of the demo's scripted turns does (plugins-sample/demo.session.yaml): the stage it
  // leaves, and the loop steps the turn inspector lists.
  const turns = [
    { say: "I swim to the bell tower.", backdrop: /The Bell Tower/, choices: /How do you reach the bell tower\?/, loop: [/Tool set-scene \(scene-stage\) · ok/, /Commit plugin\.data\.batch of scene-stage .* → moved stage\.backdrop@1, stage\.cast@1/] },
    { say: "I climb the stairs.", backdrop: /The Bell Tower/, choices: /Do you ring the drowned bell\?/, loop: [/PostLLMResponse hook · narration-review · asked for a correction/, /Do not decide or feel for the player/, /Tool offer-choices \(choices\) · ok/] },
    { say: "I swim back.", backdrop: /The Harbour/, choices: /What do you tell Oren\?/, loop: [/Model call 1 → calls set-scene, offer-choices/, /Commit plugin\.data of choices message\/current · committed → moved stage\.choices@1/] },
  ];
  let n = 0;
  for (const turn of turns) {
    n += 1;
    await tab("Playtest");
    await (await browser.$('[data-testid="player-message"]')).setValue(turn.say);
    await (await browser.$('[data-testid="play"]')).click();
    // The demo's history holds two turns: its first played turn is turn-3 (the scripted
    // narrator says the turn's number).
    await waitFor(`turn ${n} in the inspector`, async () => new RegExp(`turn ${n + 2}\\)`).test(await text('[data-testid="turn-inspector"]')));
    const loop = await text('[data-testid="turn-loop"]');
    for (const step of turn.loop) assert.match(loop, step, `turn ${n}'s loop`);
    await (await browser.$('[data-testid="turn-inspector"]')).scrollIntoView();
    await shot(`e2e-turn-${n}-inspector`, n === 2 ? "turn-inspector" : undefined);
    await tab("Stage");
    await waitFor(`turn ${n}'s narration`, async () => new RegExp(`turn ${n + 2}\\)`).test(await text('[data-testid="dialog"]')));
    assert.match(await text('[data-testid="backdrop"]'), turn.backdrop, `turn ${n}'s backdrop`);
    assert.match(await text('[data-testid="choices"]'), turn.choices, `turn ${n}'s choices`);
    await shot(`e2e-turn-${n}-stage`, n === 1 ? "stage" : undefined);
  }
  assert.notEqual(await text('[data-testid="dialog"]'), before);
  // After the turns the prompt shows the next turn with a player message, never an empty one.
  await tab("Prompt");
  const input = await text('[data-message="player-input"]');
  assert.doesNotMatch(input, /· 0 tokens/, input);
});

test("Compact now runs the compaction provider in the window although the history is under the threshold", async () => {
  await tab("Compaction");
  await (await browser.$('[data-testid="compaction-compact-now"]')).click();
  await waitFor("the last run", async () => /Last run/.test(await text("main")));
  await capture(join(shots, "e2e-compact-now.png"));
});

test("a Session panel edit is saved into the author's file in place, and undo restores the file", async () => {
  const path = join(folder, "demo.session.yaml");
  const original = await readFile(path, "utf8");
  await tab("Session");
  await waitFor("the editor", async () => /# The demo test session/.test(await text('[data-testid="session-editor"]')));
  await (await browser.$('[data-testid="locale"]')).setValue("fr");
  await (await browser.$('[data-testid="apply-locale"]')).click();
  await waitFor("the draft", async () => (await text('[data-testid="draft-state"]')) === "unsaved changes");
  assert.equal(await readFile(path, "utf8"), original, "nothing is written before Save");
  await waitFor("the save button", async () => (await browser.$('[data-testid="save-session"]')).isEnabled());
  await (await browser.$('[data-testid="save-session"]')).click();
  // Three turns were played above: the save names them and offers to keep them in a file first.
  await waitFor("the question", async () => /its 3 played turns \(turn-3, turn-4, turn-5\) would be dropped/.test(await text('[data-testid="confirm-drop-played"]')));
  assert.equal(await readFile(path, "utf8"), original, "nothing is written before the author chooses");
  await shot("e2e-session-save-asks", "session");
  await (await browser.$('[data-testid="save-played-then-session"]')).click();
  await waitFor("the played session file", async () => /Saved by Covel Studio after a playtest/.test(await readFile(join(folder, "demo.played.session.yaml"), "utf8").catch(() => "")));
  assert.match(await readFile(join(folder, "demo.played.session.yaml"), "utf8"), /I swim back\./, "the played turns are in it");
  // Out of the folder again: the Tests panel below runs every session file of it.
  await rm(join(folder, "demo.played.session.yaml"));
  await waitFor("the saved file", async () => (await readFile(path, "utf8")) === original.replace("\nlocale: en\n", "\nlocale: fr\n"));
  await waitFor("the saved state", async () => (await text('[data-testid="draft-state"]')) === "saved");
  await capture(join(shots, "e2e-session-saved.png"));
  await waitFor("the undo button", async () => /session edit/.test(await text('[data-testid="undo"]')));
  await (await browser.$('[data-testid="undo"]')).click();
  await waitFor("the restored file", async () => (await readFile(path, "utf8")) === original);
  await waitFor("the editor follows", async () => !/locale: fr/.test(await text('[data-testid="session-editor"]')));
});

test("a draft in the session editor survives a hot reload; a change on disk asks which to keep", async () => {
  const path = join(folder, "demo.session.yaml");
  await tab("Session");
  await (await browser.$('[data-testid="session-editor"] .cm-line')).click();
  await browser.keys(["Home"]);
  await browser.keys("# my draft note");
  await browser.keys(["Enter"]);
  await waitFor("the draft", async () => (await text('[data-testid="draft-state"]')) === "unsaved changes");
  const reloads = Number(await (await browser.$('[data-testid="reload-note"]')).getAttribute("data-reloads"));
  await edit("story-director/server/lib/text.js", "grave, patient", "grave, steady");
  await waitFor("the reload", async () => Number(await (await browser.$('[data-testid="reload-note"]')).getAttribute("data-reloads")) > reloads);
  assert.match(await (await browser.$('[data-testid="reload-note"]')).getAttribute("title"), /text\.js/, "the reloaded paths are in the note's title");
  assert.equal(await (await browser.$('[data-testid="reload-note"]')).getAttribute("data-fetched-whole"), "false", "the reload crossed as a patch on the snapshot the window held");
  assert.match(await text('[data-testid="session-editor"]'), /# my draft note/, "the reload kept the draft");
  assert.equal(await text('[data-testid="draft-state"]'), "unsaved changes");
  await writeFile(path, (await readFile(path, "utf8")) + "# changed on disk\n");
  await waitFor("the conflict", async () => (await browser.$('[data-testid="session-conflict"]')).isExisting());
  await capture(join(shots, "e2e-session-conflict.png"));
  await (await browser.$('[data-testid="keep-draft"]')).click();
  assert.match(await text('[data-testid="session-editor"]'), /# my draft note/);
  assert.equal(await (await browser.$('[data-testid="session-conflict"]')).isExisting(), false);
});

test("the cache and tests panels answer through the real backend", async () => {
  // A session edit above restarted the playtest: play one turn so the forecast has a played
  // turn besides the next one.
  await tab("Playtest");
  await (await browser.$('[data-testid="player-message"]')).setValue("I swim to the bell tower.");
  await (await browser.$('[data-testid="play"]')).click();
  await waitFor("the played turn", async () => /Scripted narrator/.test(await (await browser.$('[data-testid="chat"]')).getText()));
  await tab("Cache");
  await waitFor("the forecast", async () => (await browser.$$('[data-testid="cache-turn"]')).length >= 2);
  assert.match(await (await browser.$('[data-testid="cache-totals"]')).getText(), /without caching/);
  await shot("e2e-cache", "cache");
  await tab("Tests");
  await (await browser.$('[data-testid="tests-run"]')).click();
  await waitFor("the test run", async () => (await browser.$('[data-testid="tests-summary"]')).isExisting(), 60000);
  // The tone was edited on disk above: the golden snapshots name the plugin and segment.
  const diffs = await browser.$$('[data-testid="golden-diff"]');
  assert.ok(diffs.length >= 1);
  assert.match(await diffs[0].getText(), /segment story-director\/tone \(plugin story-director\) changed/);
  await shot("e2e-tests", "tests");
});

test("About in the window says what `covel-studio --version` says", async () => {
  const version = await new Promise((done, fail) => {
    const child = spawn(app, ["--version"], { stdio: ["ignore", "pipe", "inherit"], env: isolated() });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", fail);
    child.on("close", () => done(out));
  });
  const [first, sdkLine] = version.split("\n");
  const studioVersion = first.replace(/^covel-studio /, "");
  const sdk = sdkLine.replace(/^.*mirrored: /, "");
  await (await browser.$('[data-testid="about-button"]')).click();
  await waitFor("the About box", async () => (await browser.$('[data-testid="about-version"]')).isExisting());
  assert.equal(await text('[data-testid="about-version"]'), studioVersion);
  assert.equal(await text('[data-testid="about-sdk"]'), `@covel/plugin-handlers-utils ${sdk}`);
  assert.match(await text('[data-testid="about"]'), /prompt\.segment@1/);
  await capture(join(shots, "e2e-about.png"));
  await (await browser.$('[data-testid="about-button"]')).click();
});

test("New plugin… in the window starts a plugin that loads at once and whose segment reaches the prompt", async () => {
  await tab("Plugins");
  await (await browser.$('[data-testid="new-plugin"]')).click();
  await (await browser.$('[data-testid="new-plugin-id"]')).setValue("weather-report");
  await (await browser.$('[data-testid="new-plugin-create"]')).click();
  await waitFor("the new plugin, active", async () => (await text('[data-testid="status-weather-report"]').catch(() => "")) === "active", 30000);
  await capture(join(shots, "e2e-new-plugin.png"));
  await tab("Prompt");
  await waitFor("its segment in the prompt", async () => /Describe one sound in every scene\. \(weather-report\)/.test(await text('[data-segment="weather-report/guidance"]').catch(() => "")));
  // Its test session passes as written (covel test, headless, on the same folder).
  const run = spawn(join(repo, "target/debug/covel"), ["test", join(folder, "tests/weather-report.session.yaml")], { env: { ...process.env, CI: "" } });
  let out = "";
  run.stdout.on("data", (d) => (out += d));
  const code = await new Promise((r) => run.on("close", r));
  assert.equal(code, 0, out);
  // Out of the folder again for the tests below.
  await rm(join(folder, "weather-report"), { recursive: true });
  await rm(join(folder, "tests/weather-report.session.yaml"));
  await tab("Plugins");
  await waitFor("the plugin gone", async () => !(await (await browser.$('[data-testid="status-weather-report"]')).isExisting()), 30000);
});

test("a real backend's reply streams into the Playtest panel as it arrives, Esc cancels a turn, and a fork of an earlier turn compares with the branch it left", async () => {
  // A local server speaking the Anthropic Messages streaming format: each answer comes in
  // pieces 500 ms apart; the third request gets one piece and then silence.
  const replies = { 1: ["The tide ", "turns, ", "and the bell ", "rings once."], 2: ["The stairs ", "are slick."], 3: ["Something "], 4: ["Oren ", "waves back."] };
  let requests = 0;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      requests += 1;
      const pieces = replies[requests] ?? ["Again."];
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      send("message_start", { type: "message_start", message: { id: "msg", model: "m", role: "assistant", usage: { input_tokens: 10, output_tokens: 1 } } });
      send("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
      for (const text of pieces) {
        send("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text } });
        await new Promise((r) => setTimeout(r, 500));
      }
      if (requests === 3) return; // silence: the author cancels
      send("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } });
      send("message_stop", { type: "message_stop" });
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  const say = async (message) => {
    await (await browser.$('[data-testid="player-message"]')).setValue(message);
    await (await browser.$('[data-testid="play"]')).click();
  };
  const chat = () => text('[data-testid="chat"]');
  try {
    await edit("demo.session.yaml", "  story:\n    contextWindow: 32768\n", `  story:\n    backend: anthropic\n    baseUrl: "${url}"\n    model: claude-sonnet-4-5\n    contextWindow: 32768\n`);
    await tab("Playtest");
    await waitFor("the reloaded session", async () => (await browser.$$('[data-testid="turn-pick"]')).length === 0);
    await say("I listen.");
    await waitFor("the first piece", async () => /The tide/.test(await text('[data-testid="streaming"]')));
    assert.doesNotMatch(await text('[data-testid="streaming"]'), /rings once/, "the text grows before the turn ends");
    await capture(join(shots, "e2e-streaming.png"));
    await waitFor("the whole reply in the chat", async () => /assistant: The tide turns, and the bell rings once\./.test(await chat()), 30000);
    await say("I climb the stairs.");
    await waitFor("the second reply", async () => /assistant: The stairs are slick\./.test(await chat()), 30000);
    // The next turn streams one piece and stalls: Esc cancels it, and nothing is appended.
    const before = await chat();
    await say("I wait.");
    await waitFor("the stalled piece", async () => /Something/.test(await text('[data-testid="streaming"]')));
    await browser.keys(["Escape"]);
    await waitFor("the turn cancelled", async () => !(await (await browser.$('[data-testid="busy"]')).isExisting()));
    await waitFor("the bubble gone", async () => !(await (await browser.$('[data-testid="streaming"]')).isExisting()));
    await waitFor("the chat as it was, with the cancelled turn said", async () => {
      const now = await chat();
      return !/assistant: Something/.test(now) && now.startsWith(before.slice(0, 40));
    });
    // What if the player had said something else at the second turn? Fork the first one.
    await (await browser.$('[data-testid="turn-pick"]')).click();
    await (await browser.$('[data-testid="play-from-here"]')).click();
    await waitFor("the fork played", async () => /from turn-3 of main/.test(await text('[data-testid="branch"][aria-pressed="true"]')));
    assert.doesNotMatch(await chat(), /The stairs are slick/, "the fork starts right after turn-3");
    await say("I wave to Oren.");
    await waitFor("the fork's own turn", async () => /assistant: Oren waves back\./.test(await chat()), 30000);
    const picks = await browser.$$('[data-testid="turn-pick"]');
    await picks[picks.length - 1].click();
    await waitFor("the inspector on the fork's turn", async () => /I wave to Oren/.test(await text('[data-testid="turn-inspector"]')));
    const compare = await browser.$('[data-testid="turn-compare"]');
    await compare.scrollIntoView({ block: "center" });
    await compare.selectByAttribute("value", "main|turn-4");
    await waitFor("the branches compared", async () => /Changed from main · turn-4 to turn-4/.test(await text('[data-testid="turn-compare-title"]')));
    const changes = await browser.execute(() => [...document.querySelectorAll('[data-testid="turn-change"] .muted')].map((e) => e.textContent));
    assert.ok(changes.includes("player input") && changes.includes("reply"), changes.join(", "));
    await capture(join(shots, "e2e-fork-compare.png"));
    // The branch left is kept: back to main, its turns are there.
    const main = await browser.$('[data-testid="branch"][data-branch="main"]');
    await main.scrollIntoView({ block: "center" });
    await main.click();
    await waitFor("main again", async () => /assistant: The stairs are slick\./.test(await chat()));
    assert.equal(requests, 4, "a fork replays nothing: only the new turn asked the model");
  } finally {
    server.closeAllConnections?.();
    server.close();
  }
});

// The author's day: start a plugin with `covel new`, open it, change its text and see the diff,
// break it and jump to the error in the editor, fix it, play three turns, and save a session
// edit keeping the playtest. Each step's screenshot goes to docs/ with COVEL_README_SHOTS=1.
test("an author's day: covel new, open, edit and see the diff, break and jump to the error, fix, play three turns, save a session edit keeping the playtest", async () => {
  const day = await mkdtemp(join(tmpdir(), "covel-e2e-day-"));
  const covel = (args) =>
    new Promise((done) => {
      const run = spawn(join(repo, "target/debug/covel"), args, { env: { ...process.env, CI: "" } });
      let out = "";
      run.stdout.on("data", (d) => (out += d));
      run.stderr.on("data", (d) => (out += d));
      run.on("close", (code) => done({ code, out }));
    });
  const entry = join(day, "weather/server/index.js");
  const change = async (from, to) => {
    const text = await readFile(entry, "utf8");
    assert.ok(text.includes(from), from);
    await writeFile(entry, text.replace(from, to));
  };
  try {
    const created = await covel(["new", "weather", "--dir", day]);
    assert.equal(created.code, 0, created.out);
    // A second scripted turn, and the test's golden snapshot written and accepted headless.
    const sessionFile = join(day, "tests/weather.session.yaml");
    await writeFile(sessionFile, (await readFile(sessionFile, "utf8")) + "    - say: I listen.\n      reply: The wind rises.\n");
    for (const args of [["test", sessionFile, "--update"], ["test", sessionFile, "--review", "--accept-all"]]) {
      const run = await covel(args);
      assert.equal(run.code, 0, run.out);
    }
    const goldenFile = join(day, "tests/weather.golden.yaml");
    assert.equal((await readFile(goldenFile, "utf8")).match(/Describe one sound in every scene\. \(weather\)/g)?.length, 2, "both turns' prompts");
    // Open it.
    await tab("Open");
    await (await browser.$('[data-testid="open-plugins"]')).setValue(day);
    await (await browser.$('[data-testid="open-session"]')).setValue(join(day, "tests/weather.session.yaml"));
    await (await browser.$('[data-testid="open-submit"]')).click();
    await waitFor("the new plugin's segment in the prompt", async () => /Describe one sound in every scene\. \(weather\)/.test(await text('[data-segment="weather/guidance"]').catch(() => "")), 30000);
    await shot("e2e-day-1-opened", "day-1-opened");
    // Edit its text on disk: the prompt shows what changed.
    await change("Describe one sound in every scene. (weather)", "Describe one sound in every scene. (weather) Name the wind.");
    await waitFor("the diff toggle", async () => (await browser.$('[data-segment="weather/guidance"] [data-testid="diff-toggle"]')).isExisting(), 30000);
    await (await browser.$('[data-segment="weather/guidance"] [data-testid="diff-toggle"]')).click();
    await waitFor("the word diff", async () => /Name the wind\./.test(await text('[data-segment="weather/guidance"] [data-testid="segment-diff"] ins')));
    await shot("e2e-day-2-diff", "day-2-diff");
    // Break it: the problem names the place, and one click opens the editor there.
    await change("export default function (covel) {", "export default function (covel) {{");
    await tab("Problems");
    await waitFor("the syntax error", async () => (await browser.$('[data-testid="problem"][data-severity="error"] [data-testid="open-in-editor"]')).isExisting(), 30000);
    await rm(join(home, "editor-args"), { force: true });
    await (await browser.$('[data-testid="problem"][data-severity="error"] [data-testid="open-in-editor"]')).click();
    await waitFor("the editor asked", async () => /index\.js:\d+:\d+/.test(await readFile(join(home, "editor-args"), "utf8").catch(() => "")));
    const [flag, place] = (await readFile(join(home, "editor-args"), "utf8")).trim().split("\n");
    assert.equal(flag, "--goto");
    assert.match(place, new RegExp(`^${entry.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:2:\\d+$`), "the editor opens the entry at the brace that broke it");
    await shot("e2e-day-3-broken", "day-3-broken");
    // Fix it.
    await change("export default function (covel) {{", "export default function (covel) {");
    await waitFor("no error any more", async () => !(await (await browser.$('[data-testid="problem"][data-severity="error"]')).isExisting()), 30000);
    // Play three turns.
    await tab("Playtest");
    for (const [i, say] of ["I look around.", "I listen.", "I walk on."].entries()) {
      await (await browser.$('[data-testid="player-message"]')).setValue(say);
      await (await browser.$('[data-testid="play"]')).click();
      await waitFor(`turn ${i + 1}`, async () => (await browser.$$('[data-testid="turn-pick"]')).length === i + 1, 30000);
    }
    await shot("e2e-day-4-played", "day-4-played");
    // Edit the session and save it: the studio asks first, and keeps the playtest in a file.
    await tab("Session");
    await (await browser.$('[data-testid="locale"]')).setValue("fr");
    await (await browser.$('[data-testid="apply-locale"]')).click();
    await waitFor("the draft", async () => (await text('[data-testid="draft-state"]')) === "unsaved changes");
    await (await browser.$('[data-testid="save-session"]')).click();
    await waitFor("the question", async () => /3 played turns/.test(await text('[data-testid="confirm-drop-played"]').catch(() => "")));
    await shot("e2e-day-5-save-asks", "day-5-save-asks");
    await (await browser.$('[data-testid="save-played-then-session"]')).click();
    await waitFor("saved", async () => (await text('[data-testid="draft-state"]').catch(() => "")) === "saved", 30000);
    const played = await readFile(join(day, "tests/weather.played.session.yaml"), "utf8");
    for (const say of ["I look around.", "I listen.", "I walk on."]) assert.ok(played.includes(say), `the played session keeps ${say}`);
    assert.match(await readFile(join(day, "tests/weather.session.yaml"), "utf8"), /locale: fr/);
    // The text change shows in both turns' snapshots: accept the first turn's change, keep the
    // second pending.
    await tab("Tests");
    await (await browser.$('[data-testid="tests-run"]')).click();
    await waitFor("the golden differences", async () => (await browser.$('[data-testid="golden-review"]')).isExisting(), 60000);
    await (await browser.$('[data-testid="golden-review"]')).click();
    await waitFor("the first change", async () => (await browser.$('[data-testid="golden-change"] [data-testid="golden-accept"]')).isExisting(), 60000);
    await (await browser.$('[data-testid="golden-change"] [data-testid="golden-accept"]')).click();
    await waitFor("the confirmation", async () => (await browser.$('[data-testid="golden-confirm"]')).isExisting());
    assert.match(await text('[data-testid="golden-confirm"]'), /weather\.golden\.yaml/);
    await shot("e2e-day-6-golden", "day-6-golden");
    await (await browser.$('[data-testid="golden-write"]')).click();
    await waitFor("one change accepted", async () => ((await readFile(goldenFile, "utf8")).match(/Name the wind\./g)?.length ?? 0) === 1, 30000);
    const golden = await readFile(goldenFile, "utf8");
    assert.equal(golden.match(/Describe one sound in every scene\. \(weather\)/g)?.length, 2, "the other turn is as it was");
    assert.ok(await readFile(join(day, "tests/weather.golden.new"), "utf8"), "the other change is still pending");
  } finally {
    // Back to the folder the other tests use.
    await tab("Open");
    await (await browser.$('[data-testid="open-plugins"]')).setValue(folder);
    await (await browser.$('[data-testid="open-session"]')).setValue(join(folder, "demo.session.yaml"));
    await (await browser.$('[data-testid="open-submit"]')).click();
    await waitFor("the sample again", async () => (await browser.$$('[data-testid="cache-boundary"]')).length === 3, 30000);
    await rm(day, { recursive: true, force: true });
  }
});

test("start-up with a broken session shows the error with file, line and column and lets the author pick another", async () => {
  const broken = join(folder, "broken.session.yaml");
  await writeFile(broken, "id: broken\nlocale: en\nlokale: fr\n");
  await browser.deleteSession();
  browser = await open([folder, "--session", broken]);
  await waitFor("the open error", async () => (await browser.$('[data-testid="open-error"]')).isExisting());
  const error = await text('[data-testid="open-error"]');
  assert.match(error, /broken\.session\.yaml:3:1: \[session-schema\]/, error);
  assert.ok(await (await browser.$('input[placeholder="/path/to/plugins"]')).isExisting(), "the Open panel is there to pick another");
  await capture(join(shots, "e2e-startup-error.png"));
});

test("without a display the app says what to do instead of a GTK panic", async () => {
  const env = isolated();
  delete env.DISPLAY;
  delete env.WAYLAND_DISPLAY;
  const { code, stderr } = await new Promise((done, fail) => {
    const child = spawn(app, [folder], { stdio: ["ignore", "ignore", "pipe"], env });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("error", fail);
    child.on("close", (exit) => done({ code: exit, stderr: err }));
  });
  assert.equal(code, 1, stderr);
  assert.match(stderr, /no display to open the window on .*xvfb-run covel-studio/);
  assert.doesNotMatch(stderr, /panicked|backtrace/i);
});

test("start-up with a missing folder shows the error in the window and on stderr", async () => {
  const missing = join(folder, "no-such-folder");
  const child = spawn(app, [missing], { stdio: ["ignore", "ignore", "pipe"], env: isolated() });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  try {
    await waitFor("the error on stderr", async () => /could not open .*no-such-folder/.test(stderr), 60000);
  } finally {
    child.kill();
  }
  await browser.deleteSession();
  browser = await open([missing]);
  await waitFor("the open error", async () => (await browser.$('[data-testid="open-error"]')).isExisting(), 60000);
  assert.match(await text('[data-testid="open-error"]'), /no-such-folder/);
  assert.equal(await (await browser.$('[data-testid="busy"]')).isExisting(), false, "not stuck on Opening…");
  await shot("e2e-missing-folder");
});

// src-tauri/src/rendering.rs: the web view's hardware acceleration follows the machine (off
// without a GPU render node) or COVEL_STUDIO_ACCELERATION, and the log says what WebKit took.
test("the window's hardware acceleration follows the override and the log says what WebKit took", async () => {
  const started = async (env) => {
    const child = spawn(app, [folder], { stdio: ["ignore", "ignore", "pipe"], env: { ...isolated(), ...env } });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    try {
      await waitFor("the rendering line on stderr", async () => /web view hardware acceleration: /.test(stderr), 60000);
    } finally {
      child.kill();
    }
    return stderr;
  };
  assert.match(await started({ COVEL_STUDIO_ACCELERATION: "on" }), /web view hardware acceleration: Always \(COVEL_STUDIO_ACCELERATION=on\)/);
  assert.match(await started({ COVEL_STUDIO_ACCELERATION: "off" }), /web view hardware acceleration: Never \(COVEL_STUDIO_ACCELERATION=off\)/);
  const unknown = await started({ COVEL_STUDIO_ACCELERATION: "sideways" });
  assert.match(unknown, /COVEL_STUDIO_ACCELERATION="sideways" is not one of on, off, auto/);
  assert.match(unknown, /web view hardware acceleration: (Never \(no GPU render node|left as it is \(a GPU render node exists)/);
});

// Timings on a large folder (e.g. 200 generated plugins: `COVEL_E2E_PERF_DIR=/tmp/gen200`):
// panel switches and nine reloads (file written → panel painted), measured and reported, not asserted.
test("panel switches and a reload on a large folder (reported)", { skip: !process.env.COVEL_E2E_PERF_DIR }, async () => {
  const dir = process.env.COVEL_E2E_PERF_DIR;
  await browser.deleteSession();
  browser = await open([dir]);
  await waitFor("the prompt", async () => (await browser.$$('[data-testid="cache-boundary"]')).length >= 1, 120000);
  const switches = [];
  for (const name of ["Plugins", "Providers", "Problems", "Stage", "Prompt", "Problems", "Prompt", "Plugins", "Prompt", "Providers", "Prompt"]) switches.push(`${name} ${(await timeClick(`[data-tab="${name}"]`)).toFixed(0)} ms`);
  console.log(`# panel switches in the window (${dir}): ${switches.join(", ")}`);
  // The Prompt panel shows a long prompt's rows a chunk per frame after a switch: the saves
  // below wait until it has shown them all (attributes that stop growing), so that they measure
  // a save, not a save competing with that reveal for the machine's two cores.
  const shown = async () => {
    const content = await browser.$('[data-testid="prompt-content"]');
    return `${await content.getAttribute("data-segments-shown")} segments, ${await content.getAttribute("data-outline-shown")} outline rows`;
  };
  const switched = Date.now();
  let rows = await shown();
  let grew = Date.now();
  while (Date.now() - grew < 600) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await shown();
    if (now !== rows) [rows, grew] = [now, Date.now()];
  }
  console.log(`# the Prompt panel showed all its rows (${rows}) ${grew - switched} ms after the last switch`);
  const height = await browser.execute(() => document.documentElement.scrollHeight);
  console.log(`# the Prompt page is ${height} px tall`);
  const index = join(dir, (await import("node:fs")).readdirSync(dir).filter((d) => !d.startsWith(".") && !d.endsWith(".yaml")).sort()[0], "server/index.js");
  // The reloads append comments to this file (a save that changes no output), or with
  // COVEL_E2E_PERF_REPLACE put their number after that text in it (a save that changes a
  // segment's text, e.g. "The hall is old." in generated plugins); it is put back as it was
  // whatever happens.
  const replace = process.env.COVEL_E2E_PERF_REPLACE;
  const untouched = await readFile(index, "utf8");
  if (replace && !untouched.includes(replace)) throw new Error(`${index} does not hold ${JSON.stringify(replace)}`);
  try {
    // What a frame costs with nothing to do: the floor under the reloads' figures below (under Xvfb
    // it is often well above 16 ms).
    const idle = [];
    for (let i = 0; i < 5; i++) idle.push(await browser.executeAsync((done) => { const t = performance.now(); requestAnimationFrame(() => setTimeout(() => done((performance.now() - t).toFixed(0)), 0)); }));
    console.log(`# idle frames in the window, request to painted: ${idle.join(", ")} ms`);
    // File written → prompt panel painted: the write's wall-clock time against the painted
    // frame's (`data-painted-at`, epoch ms in the window; same machine, same clock).
    const note = async (name) => (await browser.$('[data-testid="reload-note"]')).getAttribute(name);
    const writtenToPainted = [];
    const applied = [];
    // Of which the script's part (merging the patch, updating the page; the rest is layout and
    // paint), marked "whole" when the patch did not fit and the whole snapshot was fetched.
    const merged = [];
    // The backend's part: the reload's own time, first file event → preview ready (the header's note).
    const reloaded = [];
    for (let i = 0; i < 9; i++) {
      const count = Number(await note("data-reloads"));
      const touched = replace ? untouched.replace(replace, `${replace} ${i}`) : (await readFile(index, "utf8")) + "\n// touched\n";
      const written = Date.now();
      await writeFile(index, touched);
      await waitFor("the reload", async () => Number(await note("data-reloads")) > count, 60000);
      await waitFor("its painted frame", async () => Number(await note("data-painted-at")) >= written, 5000);
      writtenToPainted.push(Number(await note("data-painted-at")) - written);
      applied.push(Number(await note("data-apply-ms")));
      merged.push(`${await note("data-merge-ms")}${(await note("data-fetched-whole")) === "true" ? " whole" : ""}`);
      reloaded.push(Number((await text('[data-testid="reload-note"]')).match(/· (\d+) ms/)?.[1]));
      // Apart, as an author's saves are: each reload is measured on its own.
      await new Promise((r) => setTimeout(r, 300));
    }
    const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    console.log(`# nine reloads on ${dir}${replace ? ` changing ${JSON.stringify(replace)}` : ""}, file written → prompt panel painted: ${writtenToPainted.join(", ")} ms (median ${median(writtenToPainted)} ms); of which the reload in the backend: ${reloaded.join(", ")} ms (median ${median(reloaded)} ms), applying the event in the window: ${applied.join(", ")} ms (median ${median(applied)} ms), of which script: ${merged.join(", ")} ms; last: ${await text('[data-testid="reload-note"]')}`);
  } finally {
    await writeFile(index, untouched);
  }
});
