// UI tests in Chromium: the fake-backend build served over HTTP, fed by the Rust tests'
// fixtures. Needs Debian's chromium (/usr/bin/chromium) and `npm run build:fake` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, resolve } from "node:path";
import { chromium } from "playwright-core";
import AxeBuilder from "@axe-core/playwright";

const root = resolve(import.meta.dirname, "../../dist-fake");
// A fixture is a TypeScript module `export const fixture: T = {…};` whose value is JSON.
const fixture = async (name) => {
  const text = await readFile(resolve(import.meta.dirname, "../../fixtures", name.replace(/\.json$/, ".ts")), "utf8");
  return JSON.parse(text.slice(text.indexOf(" = ") + 3, text.lastIndexOf(";")));
};
const fakeCalls = () => page.evaluate(() => window.__fakeCalls);
/** A page of its own (a new browser context, so no other test's state), showing the prompt. */
const freshPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1440, height: 920 } });
  const page = await context.newPage();
  await page.goto(url);
  await page.getByTestId("system-prompt").waitFor();
  return { context, page };
};
const shots = resolve(import.meta.dirname, "../../test-results");
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".json": "application/json" };
let server;
let browser;
let page;
let url;
let configHome;

before(async () => {
  server = createServer(async (req, res) => {
    const pathname = req.url.split("?")[0];
    const path = join(root, pathname === "/" ? "index.html" : pathname);
    let body;
    try {
      body = await readFile(path);
    } catch {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}/`;
  await mkdir(shots, { recursive: true });
  // Chromium keeps its crash reports' settings under $XDG_CONFIG_HOME even with a temporary
  // profile: a folder of the run's own keeps the author's home untouched.
  configHome = await mkdtemp(join(tmpdir(), "covel-browser-tests-"));
  browser = await chromium.launch({
    env: { ...process.env, XDG_CONFIG_HOME: configHome },
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage({ viewport: { width: 1440, height: 920 } });
  await page.goto(url);
  await page.getByTestId("system-prompt").waitFor();
});

after(async () => {
  await browser?.close();
  server?.close();
  if (configHome) await rm(configHome, { recursive: true, force: true });
});

test("the prompt panel shows blocks with cache boundaries and the segment table", async () => {
  const boundaries = await page.getByTestId("cache-boundary").allTextContents();
  assert.equal(boundaries.length, 3);
  assert.match(boundaries[0], /cache boundary 0/);
  assert.ok(await page.locator('[data-segment="story-director/tone"]').isVisible());
  const table = await page.getByTestId("segments").textContent();
  assert.match(table, /⚠ tie/);
  await page.screenshot({ path: join(shots, "browser-prompt.png") });
});

test("the world lore shows as its own part of the stable block, exactly where the kernel says it ends", async () => {
  const snapshot = await fixture("snapshot.json");
  const block = snapshot.preview.prompt.system.blocks.find((b) => b.kind === "stable-segments");
  assert.ok(block.worldLoreEnd > 0, "the demo's story has world lore");
  const lore = await page.getByTestId("world-lore").locator("pre").textContent();
  assert.equal(lore, block.text.slice(0, block.worldLoreEnd));
  assert.match(lore, /^<world-lore>\n[\s\S]*\n<\/world-lore>$/);
});

test("the prompt panel marks the moving history breakpoint and explains why it changes", async () => {
  const moving = await page.getByTestId("history-breakpoint").textContent();
  assert.match(moving, /moving cache breakpoint 3 .* changes next turn \(first difference: segment lore-book\/remember; next turn: history message m4\)/);
  const advice = page.getByTestId("cache-advice");
  assert.equal(await advice.getAttribute("data-code"), "depth-segment-moves");
  // The finding in one sentence and the one-line fix first; the explanation behind "Why".
  assert.match(await advice.textContent(), /^\s*⚠ `lore-book\/remember` moves with the history every turn: the next turn cannot read \d+ of the tokens cached this turn.*Fix: Keep it behind the moving breakpoint: a depth of at most 1/s);
  assert.equal(await advice.locator("details").getAttribute("open"), null, "the why is folded");
  assert.match(await advice.locator("details").textContent(), /between `m3` and `m4`/);
  // One meaning, one colour: the Prompt panel says a severity as the Problems panel does.
  assert.equal(await advice.getAttribute("data-severity"), "warning");
  assert.equal(await advice.evaluate((e) => getComputedStyle(e).color), "rgb(138, 90, 0)", "amber, not the errors' red");
  const notes = page.getByTestId("cache-note");
  for (const note of await notes.all()) {
    assert.match(await note.textContent(), /^ℹ note: /);
    const code = await note.getAttribute("data-code");
    await page.locator('[data-tab="Problems"]').click();
    const row = page.locator(`[data-testid="problem"][data-code="${code}"]`).first();
    assert.equal(await row.getAttribute("data-severity"), "info", `${code} is a note in Problems too`);
    await page.locator('[data-tab="Prompt"]').click();
  }
});

test("every panel counts tokens with one counter, the story model's, and says which", async () => {
  const counts = (await fixture("snapshot.json")).preview.counts;
  // The whole request: the system prompt, the messages and what the request adds around them.
  const total = counts.system.tokens + counts.messages.reduce((n, m) => n + m.tokens, 0) + counts.added.tokens;
  // The Prompt panel: the system prompt, the moving breakpoint's prefix, each row — for the model.
  assert.equal((await page.getByTestId("prompt-tokens").textContent()).trim(), `system prompt ≈${counts.system.tokens} tokens · turn turn-3`);
  assert.match(await page.getByTestId("counter-why").locator("summary").textContent(), /^counted for claude-sonnet-4-5, estimated \(system prompt \d+–\d+\)$/);
  await page.getByTestId("counter-why").locator("summary").click();
  assert.match(await page.getByTestId("counter-why").textContent(), /no story model is named: the default.*estimateTokens instead/s);
  assert.match(await page.getByTestId("counter-added").textContent(), new RegExp(`the request adds ≈${counts.added.tokens} tokens: Claude's framing .*when tools are offered, their definitions`));
  await page.getByTestId("counter-why").locator("summary").click();
  assert.match(await page.getByTestId("history-breakpoint").textContent(), new RegExp(`moving cache breakpoint 3 · ≈${counts.breakpoints[3].tokens} tokens`));
  // What the request adds around the blocks (framing, the sample's tools) is shown where every
  // prefix starts, so a first breakpoint larger than its block reads as it is.
  assert.match(await page.getByTestId("request-added").textContent(), new RegExp(`the request's framing and tool definitions · ≈${counts.added.tokens} tokens`));
  assert.match(await page.locator('[data-testid="segments"] thead').textContent(), /Tokens \(claude-sonnet-4-5\).*Budget \(estimateTokens\)/);
  // The Compaction panel says its own figure is the threshold's counter and gives the model's.
  await page.locator('[data-tab="Compaction"]').click();
  assert.match(await page.getByTestId("compaction-counter").textContent(), new RegExp(`SDK's estimateTokens.*≈${total} tokens for claude-sonnet-4-5 \\(the Prompt panel's count\\)`));
  await page.locator('[data-tab="Prompt"]').click();
  await page.getByTestId("system-prompt").waitFor();
});

test("plugin content is rendered as text, never as HTML", async () => {
  const glossary = await page.locator('[data-segment="lore-book/glossary"] pre').textContent();
  assert.match(glossary, /<glossary>/);
  assert.equal(await page.locator('[data-segment="lore-book/glossary"] glossary').count(), 0);
});

test("prompt blocks show their volatility colour (the .block border does not override it)", async () => {
  const demo = await fixture("snapshot.json");
  const colours = { stable: "rgb(47, 133, 90)", session: "rgb(49, 130, 206)", turn: "rgb(221, 107, 32)" };
  const seen = new Set();
  for (const s of demo.preview.segments.filter((s) => s.included)) {
    const block = page.locator(`[data-testid="system-prompt"] [data-segment="${s.plugin}/${s.id}"]`);
    if (!(await block.count())) continue;
    const style = await block.evaluate((e) => ({ width: getComputedStyle(e).borderLeftWidth, color: getComputedStyle(e).borderLeftColor }));
    assert.deepEqual(style, { width: "4px", color: colours[s.volatility] }, `${s.plugin}/${s.id} (${s.volatility})`);
    seen.add(s.volatility);
  }
  assert.ok(seen.size >= 2, "segments of several volatilities were checked");
});

test("the tab bar is a tablist: roles, selection and arrow keys", async () => {
  const tabs = page.getByRole("tab");
  assert.ok((await tabs.count()) >= 11);
  assert.equal(await page.getByRole("tab", { selected: true }).getAttribute("data-tab"), "Prompt");
  await page.getByRole("tab", { selected: true }).focus();
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.getByRole("tab", { selected: true }).getAttribute("data-tab"), "Cache");
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.tab), "Cache", "focus follows");
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("Alt+4");
  assert.equal(await page.getByRole("tab", { selected: true }).getAttribute("data-tab"), "Plugins", "Alt+4 is the fourth panel");
  assert.ok(await page.getByRole("tabpanel").isVisible());
  assert.equal(await page.getByRole("tabpanel").getAttribute("aria-labelledby"), "tab-Plugins");
  await page.locator('[data-tab="Prompt"]').click();
});

test("a reload highlights what changed", async () => {
  await page.evaluate(() => window.__fakeReload());
  await page.locator('.changed[data-segment="story-director/tone"]').waitFor();
  assert.match(await page.locator('[data-segment="story-director/tone"] pre').textContent(), /patient/);
  // How long applying it took in the window is recorded for the e2e timings (reported, not asserted).
  await page.waitForFunction(() => document.querySelector('[data-testid="reload-note"]').hasAttribute("data-apply-ms"));
  assert.ok(Number.isFinite(Number(await page.getByTestId("reload-note").getAttribute("data-apply-ms"))));
});

test("a reload shows the before/after words of a changed segment and a banner naming the boundary it moved", async () => {
  const reload = (await fixture("after-reload.json")).lastReload;
  const banner = await page.getByTestId("boundary-banner").allTextContents();
  assert.equal(banner.length, reload.diff.boundaries.length);
  assert.match(banner[0], new RegExp(`cache boundary ${reload.diff.boundaries[0].index} by segment story-director/tone`));
  const tone = page.locator('[data-testid="system-prompt"] [data-segment="story-director/tone"]');
  await tone.getByTestId("diff-toggle").click();
  assert.equal((await tone.locator("del").first().textContent()).trim(), "unhurried");
  assert.match(await tone.locator("ins").first().textContent(), /^patient/);
  await page.screenshot({ path: join(shots, "browser-reload-diff.png") });
  await tone.getByTestId("diff-toggle").click();
});

test("the header counts the reloaded paths, and Jump to what changed focuses each change", async () => {
  assert.match(await page.getByTestId("reload-note").textContent(), /last reload: 1 path · /);
  assert.equal(await page.getByTestId("jump-to-change").textContent(), "Jump to what changed (1)");
  await page.getByTestId("jump-to-change").click();
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.segment), "story-director/tone");
});

test("a long prompt can be searched, filtered, collapsed and navigated from its outline", async () => {
  const demo = await fixture("after-reload.json");
  const included = demo.preview.segments.filter((s) => s.included);
  await page.keyboard.press("Control+f");
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), "prompt-search", "Ctrl+F focuses the search");
  await page.keyboard.type("patient");
  const visible = () =>
    page.locator('[data-testid="prompt-content"] :is([data-segment], [data-segments]):visible').evaluateAll((es) => es.flatMap((e) => (e.dataset.segment ? [e.dataset.segment] : e.dataset.segments.split(" "))));
  assert.deepEqual(await visible(), ["story-director/tone"]);
  assert.equal(await page.getByTestId("filter-count").textContent(), `1 of ${included.length} segments match`);
  // The match is marked where it is.
  const hits = page.locator('[data-testid="prompt-content"] [data-segment="story-director/tone"] [data-testid="search-hit"]');
  assert.deepEqual(await hits.allTextContents(), ["patient"]);
  await page.getByTestId("prompt-search").fill("");
  assert.equal(await page.getByTestId("search-hit").count(), 0, "no marks without a search");
  await page.getByTestId("filter-volatility").selectOption("turn");
  const turn = included.filter((s) => s.volatility === "turn").map((s) => `${s.plugin}/${s.id}`);
  assert.deepEqual([...new Set(await visible())].filter((k) => turn.includes(k)).sort(), [...new Set(turn)].sort(), "every turn segment shows");
  const context = included.filter((s) => s.placement.kind === "turn-context").map((s) => `${s.plugin}/${s.id}`);
  assert.ok((await visible()).every((k) => turn.includes(k) || context.includes(k)), "and nothing else but the turn context they share");
  await page.getByTestId("filter-volatility").selectOption("");
  await page.getByTestId("filter-plugin").selectOption("lore-book");
  assert.ok((await visible()).every((k) => k.startsWith("lore-book/")));
  await page.getByTestId("filter-plugin").selectOption("");
  const bars = await page.getByTestId("bars-plugin").locator("li").count();
  assert.equal(bars, new Set(included.map((s) => s.plugin)).size, "a token bar per plugin");
  await page.getByTestId("collapse-all").click();
  assert.equal(await page.locator('[data-testid="system-prompt"] pre').count(), 0, "every block collapsed");
  await page.getByTestId("expand-all").click();
  assert.ok((await page.locator('[data-testid="system-prompt"] pre').count()) > 0);
  await page.getByTestId("outline").getByRole("button", { name: "cache boundary 1" }).click();
  await page.waitForFunction(() => document.activeElement?.dataset.boundary === "1");
});

test("request bodies are asked for when shown, as JSON trees with a copy button on every value, and copy as curl", async () => {
  const bodies = (await fixture("request-bodies.json"))["after-reload"];
  const asked = () => page.evaluate(() => window.__fakeCalls.filter(([name]) => name === "requestBodies").length);
  // They do not cross with the prompt: nothing is asked for until the author opens them.
  assert.equal(await page.getByTestId("request-anthropic").count(), 0, "not shown before asked for");
  assert.equal(await asked(), 0, "not asked for before shown");
  await page.getByTestId("show-requests").click();
  const tree = page.getByTestId("request-anthropic");
  await tree.waitFor();
  assert.equal(await asked(), 1);
  assert.equal(await tree.locator("pre").count(), 0, "no <pre> dump");
  await tree.locator("button.fold").first().click();
  const messages = tree.locator('[data-json-depth="1"]', { hasText: "messages" }).first();
  await messages.getByTestId("json-copy").first().click();
  assert.deepEqual(JSON.parse(await page.evaluate(() => window.__lastCopied)), bodies.anthropic.messages);
  await messages.locator("button.fold").first().click();
  assert.ok((await messages.locator('[data-json-depth="2"]').count()) >= bodies.anthropic.messages.length, "opens on demand");
  await page.getByTestId("copy-curl-anthropic").click();
  const curl = await page.evaluate(() => window.__lastCopied);
  assert.match(curl, /^curl https:\/\/api\.anthropic\.com\/v1\/messages/);
  assert.match(curl, /\$ANTHROPIC_API_KEY/);
  await page.getByTestId("copy-curl-openai").click();
  assert.match(await page.evaluate(() => window.__lastCopied), /^curl https:\/\/api\.openai\.com\/v1\/chat\/completions/);
  // Copy as SDK call: the same body, passed to the provider's JS SDK.
  for (const [provider, module, call] of [["anthropic", "@anthropic-ai/sdk", "client.messages.create("], ["openai", "openai", "client.chat.completions.create("]]) {
    await page.getByTestId(`copy-sdk-${provider}`).click();
    const sdk = await page.evaluate(() => window.__lastCopied);
    assert.ok(sdk.includes(`from "${module}";`), `${provider}: imports ${module}`);
    const body = sdk.slice(sdk.indexOf(call) + call.length, sdk.lastIndexOf(");\nconsole.log"));
    assert.deepEqual(JSON.parse(body), bodies[provider], `${provider}: the request body`);
  }
  // A patch while they are shown: asked for again, for the new version.
  await page.evaluate(() => window.__fakeReload());
  await page.waitForFunction(() => window.__fakeCalls.filter(([name]) => name === "requestBodies").length === 2);
  await tree.waitFor();
  assert.equal(await page.getByTestId("requests-updating").count(), 0, "the bodies belong to the version shown");
});

test("the reload timeline steps back through recent reloads with their word diffs", async () => {
  const timeline = page.getByTestId("reload-timeline");
  assert.equal(await timeline.getByTestId("timeline-position").textContent(), "1 of 1");
  assert.match(await timeline.getByTestId("timeline-change").first().textContent(), /story-director\/tone/);
  const next = structuredClone(await fixture("after-reload.json"));
  next.lastReload.paths = ["lore-book/server/index.js"];
  next.lastReload.plugins = { "lore-book": "replaced" };
  next.preview.segments.find((s) => s.id === "glossary").content += "\n- The Bell Rope: frayed";
  await page.evaluate((s) => window.__fakeSnapshot(s), next);
  await timeline.getByTestId("timeline-position").filter({ hasText: "1 of 2" }).waitFor();
  assert.match(await timeline.getByTestId("timeline-change").first().textContent(), /lore-book\/glossary.*Bell Rope/s);
  await timeline.getByTestId("timeline-older").click();
  assert.equal(await timeline.getByTestId("timeline-position").textContent(), "2 of 2");
  assert.match(await timeline.getByTestId("timeline-change").first().textContent(), /story-director\/tone/);
});

test("change marks fade after the next action", async () => {
  assert.equal(await page.locator('[data-testid="prompt-content"] .changed').count(), 1);
  await page.locator('[data-tab="Open"]').click();
  await page.getByTestId("open-plugins").fill("/work/plugins");
  await page.getByRole("button", { name: "Open", exact: true }).click();
  await page.locator('[data-tab="Prompt"]').click();
  await page.getByTestId("jump-to-change").filter({ hasText: "(0)" }).waitFor();
  assert.equal(await page.locator('[data-testid="prompt-content"] .changed').count(), 0);
});

test("the plugins panel lists status and providers", async () => {
  await page.locator('[data-tab="Plugins"]').click();
  assert.equal(await page.getByTestId("status-story-director").textContent(), "active");
  assert.match(await page.getByTestId("plugins").textContent(), /ui\.slot@1 · cast → stage\.cast@1/);
});

test("the plugins panel's inventory names registered extensions, never [object Object]", async () => {
  const inventory = await page.getByTestId("inventory-quest-log").textContent();
  assert.match(inventory, /extensions: ui\.slot@1 · summary/);
  assert.match(inventory, /tools: quest-update/);
  // Tools and hooks run in played turns: no "never runs" note for a plugin that registers only those.
  assert.equal(await page.getByTestId("not-run-quest-log").count(), 0, "quest-log's tool and hook run in played turns");
  assert.equal(await page.getByTestId("not-run-story-director").count(), 0, "no note where nothing else was registered");
  assert.doesNotMatch(await page.getByTestId("plugins").textContent(), /\[object Object\]/);
});

test("the stage renders backdrop, cast, choices, status bar and music", async () => {
  await page.locator('[data-tab="Stage"]').click();
  assert.match(await page.getByTestId("backdrop").textContent(), /The Harbour/);
  assert.ok(await page.locator('.actor.active[data-actor="tavi"]').isVisible());
  // The speaker is said in words, not by colour alone.
  assert.equal(await page.locator('[data-actor="tavi"] [data-testid="speaking"]').textContent(), "▶ speaking");
  assert.equal(await page.locator('[data-actor="tavi"]').getAttribute("aria-current"), "true");
  assert.equal(await page.getByTestId("speaking").count(), 1);
  assert.match(await page.getByTestId("choices").textContent(), /Swim at low tide/);
  const bar = await page.getByTestId("status-bar").textContent();
  assert.match(bar, /Trust/);
  assert.match(bar, /4 \/ 10/);
  assert.match(await page.getByTestId("music").textContent(), /Harbour at Night/);
  await page.screenshot({ path: join(shots, "browser-stage.png") });
});

test("the world panel shows dimensions with versions and the provider", async () => {
  await page.locator('[data-tab="World"]').click();
  assert.equal(await page.getByTestId("world-provider").textContent(), "world-state");
  assert.match(await page.getByTestId("dimensions").textContent(), /trust.*Trust.*4.*v2/s);
});

test("switching the runtime assembles the prompt for that runtime", async () => {
  await page.locator('[data-tab="Prompt"]').click();
  const rules = () => page.getByTestId("segments").locator("tr", { hasText: "story-director/reply-rules" }).textContent();
  assert.match(await rules(), /excluded: audience `self`/, "the story runtime does not see story-director's self segment");
  await page.getByTestId("runtime").selectOption("plugin:story-director");
  await page.locator('[data-block="body"] pre', { hasText: "# Story Director" }).waitFor();
  assert.deepEqual((await fakeCalls()).at(-1), ["setRuntime", { kind: "plugin", id: "story-director" }]);
  assert.match(await rules(), /message|system prompt|turn context/, "its own runtime includes it");
  assert.doesNotMatch(await rules(), /excluded/);
  await page.getByTestId("contract").fill("narrative-engine@1");
  await page.getByTestId("assemble-contract").click();
  await page.getByTestId("error").waitFor();
  assert.deepEqual((await fakeCalls()).at(-1), ["setRuntime", { kind: "contract", id: "narrative-engine@1" }], "the contract field asks for that contract");
  // The error of an action can be dismissed; it does not stay above every panel.
  await page.getByTestId("dismiss-error").click();
  assert.equal(await page.getByTestId("error").count(), 0);
  assert.equal(await page.getByTestId("runtime").inputValue(), "plugin:story-director", "a refused switch leaves the selector on the backend's runtime");
  await page.locator('[data-tab="Stage"]').click();
  await page.locator('[data-tab="Prompt"]').click();
  assert.equal(await page.getByTestId("runtime").inputValue(), "plugin:story-director", "after a tab switch the selector still shows the backend's runtime");
  await page.getByTestId("runtime").selectOption("story");
  await page.locator('[data-block="body"] pre', { hasText: "narrator of an interactive story set in Vell" }).waitFor();
  assert.match(await rules(), /excluded/);
});

test("the providers panel shows each chain in call order with durations and what handlers logged", async () => {
  const demo = await fixture("snapshot.json");
  await page.locator('[data-tab="Providers"]').click();
  const keys = await page.locator("table[data-chain]").evaluateAll((tables) => tables.map((t) => t.dataset.chain));
  // In call order; a keyed slot's calls (character.visual@1 per character) as one chain per key.
  const characters = demo.preview.slots.filter((s) => s.key).map((s) => `ui.slot@1 → ${s.slot}[${s.key}]`);
  const keyedSlots = new Set(demo.preview.slots.filter((s) => s.key).map((s) => s.slot));
  const expected = [...new Set(demo.preview.calls.map((c) => (c.slot ? `${c.point} → ${c.slot}` : c.point)))].flatMap((k) => {
    const slot = k.replace("ui.slot@1 → ", "");
    return keyedSlots.has(slot) ? characters.filter((c) => c.includes(`→ ${slot}[`)) : [k];
  });
  assert.deepEqual(keys.slice(0, expected.length), expected, "the preview's chains in call order");
  assert.ok(characters.every((c) => keys.includes(c)), "character.visual@1 per character");
  assert.deepEqual(keys.slice(expected.length), ["history.compact@2"], "then the points the preview does not run");
  const compact = page.locator('table[data-chain="history.compact@2"] [data-testid="not-called"]');
  assert.match(await compact.textContent(), /history-compaction\/segmented-summary.*not called.*this preview does not run this point/);
  assert.equal(await page.locator('table[data-chain="prompt.segment@1"] .tie').count(), 0, "no tie marks where the call order decides nothing");
  // (Each provider's name is followed by its registration site, file:line:col.)
  const segmentRows = await page.locator('table[data-chain="prompt.segment@1"] tbody tr td:nth-child(2)').evaluateAll((cells) => cells.map((c) => c.textContent.replace(c.querySelector(".source-link")?.textContent ?? "", "")));
  const expectedRows = [...new Set(demo.preview.calls.filter((c) => c.point === "prompt.segment@1").map((c) => `${c.pluginId}/${c.providerId}`))];
  assert.deepEqual(segmentRows, expectedRows, "providers in the order they ran");
  const tone = page.locator('table[data-chain="prompt.segment@1"] tbody tr', { hasText: "story-director/tone" });
  assert.match(await tone.textContent(), /\[log\] tone setting: grave/, "what the handler logged");
  assert.equal((await tone.locator("td:nth-child(5)").textContent()).trim(), "1.50", "its duration in ms");
});

test("playing a turn updates the chat and the compaction panel", async () => {
  const [before, after] = [await fixture("snapshot.json"), await fixture("after-turn.json")];
  assert.notEqual(before.compaction.estimatedTokens, after.compaction.estimatedTokens);
  await page.locator('[data-tab="Compaction"]').click();
  assert.match(await page.getByTestId("compaction-estimate").textContent(), new RegExp(`^Estimate ${before.compaction.estimatedTokens} tokens`));
  // Each panel's count says what it counts, so two different numbers are never a riddle.
  assert.match(await page.getByTestId("compaction-counter").textContent(), /Counted as the threshold counts: the SDK's estimateTokens of the system prompt and the whole history/);
  await page.locator('[data-tab="Playtest"]').click();
  await page.getByTestId("player-message").fill("I swim to the bell tower.");
  await page.getByTestId("play").click();
  await page.getByText("Scripted narrator").first().waitFor();
  assert.deepEqual((await fakeCalls()).filter((c) => c[0] === "playTurn").at(-1), ["playTurn", "I swim to the bell tower."]);
  await page.locator('[data-tab="Compaction"]').click();
  assert.match(await page.getByTestId("compaction-estimate").textContent(), new RegExp(`^Estimate ${after.compaction.estimatedTokens} tokens`), "the estimate after the turn");
});

test("a reply that streams grows in the chat before the turn ends", async () => {
  await page.locator('[data-tab="Playtest"]').click();
  // The last piece is held back until the test has seen the first ones.
  await page.evaluate(() => { window.__fakeStream = ["The bell ", "rings ", "once."]; window.__fakeStreamHold = true; });
  await page.getByTestId("player-message").fill("I listen.");
  await page.getByTestId("play").click();
  const bubble = page.getByTestId("streaming");
  await bubble.filter({ hasText: "The bell rings" }).waitFor();
  assert.doesNotMatch(await bubble.textContent(), /once\./, "the first pieces show before the last arrived");
  await page.evaluate(() => { window.__fakeStreamHold = false; });
  await bubble.filter({ hasText: "The bell rings once." }).waitFor();
  await page.screenshot({ path: join(shots, "browser-streaming.png") });
  await bubble.waitFor({ state: "detached" });
  assert.ok((await fakeCalls()).some((c) => c[0] === "playTurn" && c[1] === "I listen."));
  // Esc cancels a turn while it streams: the studio is asked to cancel, the bubble goes.
  await page.evaluate(() => (window.__fakeStream = ["A long ", "reply ", "that ", "goes ", "on."]));
  await page.getByTestId("player-message").fill("I wait.");
  await page.getByTestId("play").click();
  await bubble.filter({ hasText: "A long" }).waitFor();
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => window.__fakeCalls.some((c) => c[0] === "cancel"));
  await bubble.waitFor({ state: "detached" });
});

test("the turn inspector shows the played turn's prompt with its boundaries, reply, events, slot changes and compaction", async () => {
  const turn = (await fixture("after-turn.json")).turns[0];
  const sent = (await fixture("turn-previews.json"))[turn.turnId].preview;
  await page.locator('[data-tab="Playtest"]').click();
  const inspector = page.getByTestId("turn-inspector");
  await inspector.getByTestId("turn-prompt").waitFor();
  assert.ok((await fakeCalls()).some((c) => c[0] === "turnPrompt" && c[1] === turn.turnId), "the prompt is asked for on demand");
  assert.equal(await inspector.getByTestId("turn-boundary").count(), sent.prompt.system.blocks.filter((b) => b.cacheBoundary).length);
  assert.equal(await inspector.getByTestId("turn-prompt").locator("li:not(.boundary-line)").count(), sent.prompt.system.blocks.length + sent.prompt.messages.length);
  assert.equal(await inspector.getByTestId("turn-reply").textContent(), turn.reply.text);
  const compaction = await inspector.getByTestId("turn-compaction").textContent();
  if (turn.compaction) assert.match(compaction, new RegExp(`estimate ${turn.compaction.estimatedTokens} of threshold`));
  else assert.match(compaction, /not due after this turn/, "a turn records a compaction run only when one was due");
  assert.match(await inspector.textContent(), new RegExp(`Events \\(${turn.events.length}\\)`));
  // The turn's loop: the demo's first turn calls scene-stage's set-scene tool, whose write moves
  // the backdrop and the cast when the turn commits.
  const loop = await inspector.getByTestId("turn-loop").textContent();
  assert.match(loop, /Model call 1 → calls set-scene/);
  assert.match(loop, /Tool set-scene \(scene-stage\) · ok · 1 proposal/);
  assert.match(loop, /Commit plugin\.data\.batch of scene-stage stage\/current, active-cast\/current, direction\/current · committed → moved stage\.backdrop@1, stage\.cast@1/);
  assert.doesNotMatch(loop, /TurnStop hook/, "hooks that let everything through are folded away");
  await inspector.getByTestId("turn-loop-quiet").check();
  assert.match(await inspector.getByTestId("turn-loop").textContent(), /TurnStop hook · quest-log · continue/);
  const stage = await page.getByTestId("playtest-stage").textContent();
  assert.match(stage, /The Bell Tower/, "the stage beside the chat shows the scene the tool set");
  assert.match(stage, /Swim at low tide/);
  await page.screenshot({ path: join(shots, "browser-turn-inspector.png") });
});

test("a form the turn asks for is drawn as the player would fill it; its problems show by field, and a good answer is played", async () => {
  await page.locator('[data-tab="Playtest"]').click();
  await page.evaluate(() => {
    window.__fakeForm = { pluginId: "char-sheet", interaction: { type: "form", interactionId: "who", title: "Who are you?", submitLabel: "Begin", narrativeTemplate: "I am {{name}}.",
      fields: [{ type: "text", name: "name", label: "Name", required: true }, { type: "select", name: "role", label: "Role", options: ["diver", { value: "keeper", label: "Lighthouse keeper" }] }] } };
    window.__fakeFormAnswer = { problems: [{ field: "name", message: "required" }] };
  });
  await page.getByTestId("player-message").fill("I look around.");
  await page.getByTestId("play").click();
  const form = page.getByTestId("player-form");
  await form.waitFor();
  assert.match(await form.textContent(), /Who are you\?.*asked by char-sheet/s);
  assert.equal(await form.locator("select option").nth(2).textContent(), "Lighthouse keeper");
  await form.getByTestId("form-submit").click();
  await form.getByTestId("form-problem").waitFor();
  assert.equal(await form.getByTestId("form-problem").textContent(), "required");
  await page.screenshot({ path: join(shots, "browser-player-form.png") });
  await page.evaluate(() => (window.__fakeFormAnswer = { said: "I am Mira.", problems: [] }));
  await form.locator('[data-field="name"]').fill("Mira");
  await form.locator('[data-field="role"]').selectOption("keeper");
  await form.getByTestId("form-submit").click();
  await page.waitForFunction(() => window.__fakeCalls.some((c) => c[0] === "playTurn" && c[1] === "I am Mira."));
  const answered = (await fakeCalls()).filter((c) => c[0] === "answerForm").at(-1);
  assert.deepEqual(answered[1], { name: "Mira", role: "keeper" });
});

test("Run everything again asks the backend to rerun every provider without the memo", async () => {
  const before = (await fakeCalls()).length;
  await page.getByTestId("run-again").click();
  await page.waitForFunction((n) => window.__fakeCalls.slice(n).some((c) => c[0] === "runEverythingAgain"), before);
});

test("Compact now asks the backend to compact, from the Playtest and Compaction panels", async () => {
  await page.locator('[data-tab="Playtest"]').click();
  const first = (await fakeCalls()).length;
  await page.getByTestId("compact-now").click();
  await page.waitForFunction((n) => window.__fakeCalls.slice(n).some((c) => c[0] === "compactNow"), first);
  await page.locator('[data-tab="Compaction"]').click();
  const before = (await fakeCalls()).length;
  await page.getByTestId("compaction-compact-now").click();
  await page.waitForFunction((n) => window.__fakeCalls.slice(n).some((c) => c[0] === "compactNow"), before);
});

test("a played turn can be undone and the played session saved", async () => {
  await page.locator('[data-tab="Playtest"]').click();
  assert.match(await page.getByTestId("chat").textContent(), /Scripted narrator/);
  await page.getByTestId("played-path").fill("/tmp/played.session.yaml");
  await page.getByTestId("save-played").click();
  await page.getByTestId("played-saved").waitFor();
  assert.deepEqual((await fakeCalls()).at(-1), ["savePlayedSession", "/tmp/played.session.yaml"]);
  await page.getByTestId("undo-turn").click();
  await page.getByTestId("chat").filter({ hasNotText: "Scripted narrator" }).waitFor();
  assert.deepEqual((await fakeCalls()).at(-1), ["undo"]);
});

// Last: the edited session stays the fake's state.
test("the session panel saves an edit and the plugins panel shows the resolver's rejection code", async () => {
  // A played turn first: a save then asks before it drops it.
  await page.locator('[data-tab="Playtest"]').click();
  await page.getByTestId("player-message").fill("I swim to the bell tower.");
  await page.getByTestId("play").click();
  await page.getByText("Scripted narrator").first().waitFor();
  await page.locator('[data-tab="Plugins"]').click();
  assert.equal(await page.getByTestId("status-soundtrack").textContent(), "active");
  await page.locator('[data-tab="Session"]').click();
  await page.locator('[data-plugin-toggle="soundtrack"]').uncheck();
  await page.getByText("unsaved changes").waitFor();
  assert.deepEqual((await fakeCalls()).at(-1), ["applySessionEdits", [{ kind: "set-plugin-enabled", plugin: "soundtrack", enabled: false }]]);
  await page.getByTestId("save-session").click();
  // The playtest has a played turn: the save asks first, naming it, and saves nothing yet.
  const ask = page.getByTestId("confirm-drop-played");
  await ask.waitFor();
  assert.match(await ask.textContent(), /restarts the playtest: its 1 played turn \(turn-3\) would be dropped/);
  assert.equal((await fakeCalls()).filter((c) => c[0] === "saveSessionText").length, 0, "nothing saved before the author chose");
  await page.getByTestId("drop-played-and-save").click();
  await page.locator('[data-tab="Plugins"]').click();
  await page.getByTestId("status-soundtrack").filter({ hasText: "rejected" }).waitFor();
  const saved = (await fakeCalls()).filter((c) => c[0] === "saveSessionText").at(-1);
  assert.equal(saved[2], true, "the author chose to drop the played turns");
  assert.match(saved[1], /excluded:[\s\S]*soundtrack/, "the edited text was saved");
  assert.match(saved[1], /# The demo test session/, "with the author's comments");
  const row = await page.locator('tr[data-plugin="soundtrack"]').textContent();
  assert.match(row, /excluded: `soundtrack` is excluded by the session/, "the rejection with its resolver code");
});

test("the session editor keeps its draft over a reload, marks the loader's diagnostics inline and asks on a change on disk", async () => {
  await page.locator('[data-tab="Session"]').click();
  const editor = page.locator('[data-testid="session-editor"] .cm-content');
  await editor.waitFor();
  assert.match(await editor.textContent(), /The demo test session/);
  await page.getByTestId("locale").fill("fr");
  await page.getByTestId("apply-locale").click();
  await page.getByText("unsaved changes").waitFor();
  assert.match(await editor.textContent(), /locale: fr/);
  assert.match(await editor.textContent(), /# The demo test session/, "the comments stay");
  await page.evaluate(() => window.__fakeReload());
  await page.locator('[data-tab="Prompt"]').click();
  await page.locator('[data-tab="Session"]').click();
  assert.match(await page.locator('[data-testid="session-editor"] .cm-content').textContent(), /locale: fr/, "the draft survives the reload and a tab switch");
  await page.locator('[data-testid="session-editor"] .cm-line').first().click();
  await page.keyboard.press("Home");
  await page.keyboard.type("oops: [\n");
  await page.getByTestId("session-diagnostic").first().waitFor();
  await page.locator(".cm-lintRange-error").first().waitFor();
  assert.ok(await page.getByTestId("save-session").isDisabled(), "text the loader refuses cannot be saved");
  await page.screenshot({ path: join(shots, "browser-session-diagnostic.png") });
  await page.evaluate(() => window.__fakeSessionChanged("id: demo\nlocale: de\n"));
  await page.getByTestId("session-conflict").waitFor();
  await page.getByTestId("load-file").click();
  assert.match(await page.locator('[data-testid="session-editor"] .cm-content').textContent(), /locale: de/);
  assert.equal(await page.getByTestId("draft-state").textContent(), "saved");
});

test("an open that failed before the page listened is shown with file, line and column", async () => {
  const failed = await browser.newPage();
  await failed.goto(`${url}?open-failed`);
  await failed.getByTestId("open-error").waitFor();
  assert.match(await failed.getByTestId("open-error").textContent(), /broken\.session\.yaml:3:1: \[session-schema\] unknown field `lokale`/);
  assert.ok(await failed.getByPlaceholder("/path/to/plugins").isVisible(), "the author can pick another folder");
  await failed.getByTestId("dismiss-open-error").click();
  assert.equal(await failed.getByTestId("open-error").count(), 0, "dismissed");
  assert.ok(await failed.getByPlaceholder("/path/to/plugins").isVisible(), "the Open panel stays");
  await failed.close();
});

test("the cache panel forecasts each turn's breakpoints with costs, the ledger and advice", async () => {
  await page.locator('[data-tab="Cache"]').click();
  await page.getByTestId("cache-totals").waitFor();
  assert.match(await page.getByTestId("cache-model").textContent(), /claude-sonnet-4-5 \(anthropic, explicit breakpoints\)/);
  assert.equal(await page.getByTestId("cache-turn").count(), 2, "the played turn and the next one");
  // The demo's lore is long enough for Sonnet to cache: the next turn reads the system prompt
  // written by the played one, and caching saves money.
  assert.equal(await page.getByTestId("cache-too-short").count(), 0);
  const next = page.getByTestId("cache-turn").nth(1);
  assert.match(await next.textContent(), /hit · system block stable-segments/);
  assert.match(await page.getByTestId("cache-totals").textContent(), /against \$.* without caching \(saves [1-9]\d*%\)/);
  assert.match(await page.getByTestId("ledger").textContent(), /story-director/);
  assert.match(await page.getByTestId("advice").textContent(), /lore-book\/remember/);
  assert.equal(await page.getByTestId("cache-turn-recomputed").count(), 0, "nothing was reloaded");
  await page.screenshot({ path: join(shots, "browser-cache.png") });
});

test("the cache panel says first when the prompt is too short for the model to cache", async () => {
  await page.getByTestId("cache-model-input").fill("claude-haiku-4-5");
  await page.getByTestId("cache-too-short").waitFor();
  // Haiku 4.5 caches prefixes of 4096 tokens or more: a prefix that is too short reads as that,
  // not as a red miss.
  assert.match(await page.getByTestId("cache-too-short").textContent(), /Nothing can be cached yet: the longest prefix up to a breakpoint here is \d+ tokens, under claude-haiku-4-5's minimum of 4096/);
  assert.equal(await page.locator('[data-testid="cache-turns"] .error[data-outcome="miss"]').count(), 0, "no red misses for prefixes too short to cache");
  assert.match(await page.locator('[data-testid="cache-turns"] [data-short]').first().textContent(), /^too short to cache · /);
  await page.getByTestId("cache-model-input").fill("");
  await page.getByTestId("cache-model").filter({ hasText: "claude-sonnet-4-5" }).waitFor();
});

test("the cache panel marks a played turn whose prompt was recomputed after a plugin reload", async () => {
  const played = (await fixture("forecast.json")).turns[0].turnId;
  await page.evaluate((id) => { globalThis.__fakeRecomputed = [id]; }, played);
  await page.getByLabel("Pace (s per turn)").fill("61");
  await page.getByTestId("cache-turn-recomputed").waitFor();
  assert.match(await page.getByTestId("cache-turns").textContent(), /recomputed with the plugins as they are now/);
  await page.evaluate(() => { globalThis.__fakeRecomputed = []; });
});

test("the tests panel runs the folder's test sessions and lists every check", async () => {
  await page.locator('[data-tab="Tests"]').click();
  await page.getByTestId("tests-run").click();
  await page.getByTestId("tests-summary").waitFor();
  assert.match(await page.getByTestId("tests-summary").textContent(), /5 sessions, \d+ checks: all passed/);
  assert.equal(await page.getByTestId("test-session").count(), 5);
  assert.match(await page.getByTestId("test-session").nth(1).textContent(), /\[segment-placement\] segment story-director\/tone in stable-segments/);
  // A check's detail and a difference's other turns keep their space before them (Svelte drops
  // the white space before a block, so they are written as expressions).
  const run = await fixture("tests.json");
  const failing = structuredClone(run);
  const turn = failing.sessions[1].turns[0];
  turn.checks[0] = { ...turn.checks[0], passed: false, detail: "not found" };
  turn.goldenDifferences = [{ place: "system block stable-segments", change: "changed", diff: "x", alsoIn: ["turn-3"] }];
  await page.evaluate((r) => { window.__fakeTests = r; }, failing);
  try {
    await page.getByTestId("tests-run").click();
    await page.getByTestId("golden-diff").waitFor();
    const text = await page.getByTestId("test-session").nth(1).textContent();
    assert.match(text, /\S — not found/);
    assert.match(text, /changed \(also in turn-3\): x/);
  } finally {
    await page.evaluate(() => { delete window.__fakeTests; });
  }
  await page.screenshot({ path: join(shots, "browser-tests.png") });
});

test("a tested turn names the provider calls that failed in it, which explain what its checks miss", async () => {
  const run = await fixture("tests.json");
  const failing = structuredClone(run);
  const turn = failing.sessions[1].turns[0];
  turn.passed = false;
  turn.failedCalls = [{ pluginId: "story-director", providerId: "tone", point: "prompt.segment@1", outcome: "invalid-output", message: 'at /0/order: "first" is not of type "integer"' }];
  failing.sessions[1].passed = false;
  await page.evaluate((r) => { window.__fakeTests = r; }, failing);
  try {
    await page.locator('[data-tab="Tests"]').click();
    await page.getByTestId("tests-run").click();
    const line = page.getByTestId("test-failed-call");
    await line.waitFor();
    assert.equal(await line.count(), 1);
    assert.equal((await line.textContent()).trim(), '⚠ Provider failed: story-director/tone on prompt.segment@1 → invalid-output — at /0/order: "first" is not of type "integer"');
    assert.match(await page.getByTestId("tests-summary").textContent(), /^\s*5 sessions, \d+ checks: 1 session failed\s*$/);
    await line.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(shots, "browser-tests-failed-call.png") });
  } finally {
    await page.evaluate(() => { delete window.__fakeTests; });
  }
});

test("golden changes are reviewed one by one: each accepted (asking first, naming the file) or rejected", async () => {
  const run = await fixture("tests.json");
  const tone = { place: "system block stable-segments", from: "segment story-director/tone", plugin: "story-director", change: "changed", diff: "Keep a [-grave-]{+wry+} voice." };
  const differs = structuredClone(run);
  const target = differs.sessions[1];
  target.golden = "differs";
  target.passed = false;
  target.turns[0].goldenDifferences = [{ ...tone, alsoIn: [target.turns[1].turnId] }];
  target.turns[1].goldenDifferences = [{ ...tone, sameAs: target.turns[0].turnId }];
  // After "Review": two pending changes; after accepting the first: one; after rejecting it: none.
  const reviewing = structuredClone(differs);
  const change = (i) => ({ index: i, turn: target.turns[i].turnId, kind: "changed", differences: [target.turns[i].goldenDifferences[0]] });
  reviewing.sessions[1].pending = [change(0), change(1)];
  const oneLeft = structuredClone(reviewing);
  oneLeft.sessions[1].pending = [change(1)];
  const done = structuredClone(run);
  await page.evaluate(([answer, after]) => ((window.__fakeTests = answer), (window.__fakeReviewTests = after)), [differs, [oneLeft, done]]);
  await page.locator('[data-tab="Tests"]').click();
  await page.getByTestId("tests-run").click();
  await page.getByTestId("golden-review").waitFor();
  assert.equal(await page.getByTestId("golden-review").count(), 1, "only the session whose snapshot differs");
  assert.match(await page.getByTestId("test-session").nth(1).textContent(), /same as /, "the repeated diff is shown once");
  await page.evaluate((answer) => (window.__fakeTests = answer), reviewing);
  await page.getByTestId("golden-review").click();
  await page.getByTestId("golden-change").waitFor();
  assert.deepEqual((await fakeCalls()).filter((c) => c[0] === "runTests").at(-1), ["runTests", true, target.session], "that session's pending file alone");
  assert.match(await page.getByTestId("golden-change").textContent(), new RegExp(`Change 1 of 2.*${target.turns[0].turnId}`, "s"));
  await page.getByTestId("golden-accept").click();
  const ask = page.getByTestId("golden-confirm");
  const file = target.goldenFile.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  assert.match(await ask.textContent(), new RegExp(`Write ${file} with ${target.turns[0].turnId}'s change \\(1 difference\\)\\?.*The other change stays pending`, "s"));
  await page.getByTestId("golden-write").click();
  await page.waitForFunction(() => window.__fakeCalls.some((c) => c[0] === "reviewGoldenChange"));
  assert.deepEqual((await fakeCalls()).filter((c) => c[0] === "reviewGoldenChange"), [["reviewGoldenChange", target.session, 0, true]]);
  await page.getByText("Change 1 of 1").waitFor();
  await page.getByTestId("golden-reject").click();
  await page.waitForFunction(() => window.__fakeCalls.filter((c) => c[0] === "reviewGoldenChange").length === 2);
  assert.deepEqual((await fakeCalls()).filter((c) => c[0] === "reviewGoldenChange").at(-1), ["reviewGoldenChange", target.session, 1, false], "rejecting does not ask: nothing of the author's is written");
  await page.getByTestId("golden-change").waitFor({ state: "detached" });
  await page.evaluate(() => ((window.__fakeTests = undefined), (window.__fakeReviewTests = undefined)));
});

test("a session whose expectations fail is written for review only when forced, after a confirmation naming the file and what fails", async () => {
  const run = await fixture("tests.json");
  const differs = structuredClone(run);
  const target = differs.sessions[1];
  target.golden = "differs";
  target.passed = false;
  const failingCheck = { ...target.turns[0].checks[0], passed: false, detail: "\"grave, unhurried\" is not in the system prompt", location: "tests/bell-tower.session.yaml:82:11" };
  target.turns[0].checks[0] = failingCheck;
  target.turns[0].passed = false;
  target.turns[0].goldenDifferences = [{ place: "system block stable-segments", from: "segment story-director/tone", plugin: "story-director", change: "changed", diff: "Keep a [-grave-]{+wry+} voice." }];
  const pendingFile = target.goldenFile.replace(/\.yaml$/, ".new");
  // "Review" is refused while an expectation fails, as `covel test --update` refuses.
  const refused = structuredClone(differs);
  refused.sessions[1].golden = "refused";
  refused.sessions[1].error = `not writing ${pendingFile}: expectations fail: ${target.turns[0].turnId} [${failingCheck.rule}] ${failingCheck.description} (${failingCheck.location}). Fix them, or pass --force to write it anyway`;
  const forced = structuredClone(differs);
  forced.sessions[1].golden = "pending";
  forced.sessions[1].pending = [{ index: 0, turn: target.turns[0].turnId, kind: "changed", differences: target.turns[0].goldenDifferences }];
  await page.evaluate(([answer, force]) => ((window.__fakeTests = answer), (window.__fakeForceTests = force)), [differs, forced]);
  await page.locator('[data-tab="Tests"]').click();
  await page.getByTestId("tests-run").click();
  await page.getByTestId("golden-review").waitFor();
  await page.evaluate((answer) => (window.__fakeTests = answer), refused);
  await page.getByTestId("golden-review").click();
  await page.getByTestId("golden-force-ask").waitFor();
  assert.equal(await page.getByTestId("golden-change").count(), 0, "nothing pending: the update was refused");
  assert.equal(await page.getByTestId("golden-force-confirm").count(), 0, "forcing asks first");
  await page.getByTestId("golden-force-ask").click();
  const ask = page.getByTestId("golden-force-confirm");
  const text = await ask.textContent();
  const escape = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  assert.match(text, new RegExp(`Write ${escape(pendingFile)} from this run although 1 expectation fails\\?`));
  assert.match(text, new RegExp(`${escape(target.goldenFile)} changes only when you accept one`));
  assert.match(text, new RegExp(`${target.turns[0].turnId} \\[${failingCheck.rule}\\] ${escape(failingCheck.description)} \\(${escape(failingCheck.location)}\\)`));
  assert.ok(!(await fakeCalls()).some((c) => c[0] === "runTests" && c.includes("force")), "nothing forced before Write anyway");
  await page.getByTestId("golden-force-write").click();
  await page.getByTestId("golden-change").waitFor();
  assert.deepEqual((await fakeCalls()).filter((c) => c[0] === "runTests").at(-1), ["runTests", true, target.session, "force"], "that session alone, forced");
  assert.match(await page.getByTestId("golden-change").textContent(), /Change 1 of 1/);
  await page.evaluate(() => ((window.__fakeTests = undefined), (window.__fakeForceTests = undefined)));
});

test("the problems panel lists every problem with a count badge and links to its place", async () => {
  const demo = await fixture("snapshot.json");
  await page.locator('[data-tab="Problems"]').click();
  const rows = page.getByTestId("problem");
  assert.ok((await rows.count()) >= demo.preview.cache.advice.length + demo.preview.cache.warnings.length);
  const advice = rows.filter({ hasText: "depth-segment-moves" });
  assert.equal(await advice.count(), 1);
  const badge = Number(await page.getByTestId("count-Problems").textContent());
  assert.equal(badge, await page.locator('[data-testid="problem"]:not([data-severity="info"])').count(), "the badge counts errors and warnings");
  await advice.getByTestId("problem-link").click();
  assert.equal(await page.getByRole("tab", { selected: true }).getAttribute("data-tab"), "Prompt");
  await page.waitForFunction(() => document.activeElement?.dataset.segment === "lore-book/remember");
  await page.screenshot({ path: join(shots, "browser-problems-link.png") });
});

test("a handler that throws at run time shows in Problems, on the Providers tab's badge and against its plugin", async () => {
  const demo = await fixture("snapshot.json");
  const broken = structuredClone(demo);
  const call = broken.preview.calls.find((c) => c.pluginId === "story-director" && c.providerId === "tone");
  Object.assign(call, { outcome: "error", errorCode: "invocation-error", message: "Error: the tone table is empty" });
  const problemsPage = await browser.newPage({ viewport: { width: 1440, height: 920 } });
  await problemsPage.goto(url);
  await problemsPage.getByTestId("system-prompt").waitFor();
  await problemsPage.evaluate((s) => window.__fakeSnapshot(s), broken);
  await problemsPage.getByTestId("count-Providers").waitFor();
  assert.equal(await problemsPage.getByTestId("count-Providers").textContent(), "1");
  await problemsPage.locator('[data-tab="Problems"]').click();
  const row = problemsPage.getByTestId("problem").first();
  assert.equal(await row.getAttribute("data-severity"), "error");
  assert.match(await row.textContent(), /story-director\/tone .*the tone table is empty/);
  await problemsPage.screenshot({ path: join(shots, "browser-problems.png") });
  await row.getByTestId("problem-link").click();
  await problemsPage.waitForFunction(() => document.activeElement?.dataset.call === "prompt.segment@1|story-director/tone");
  await problemsPage.locator('[data-tab="Plugins"]').click();
  assert.match(await problemsPage.getByTestId("failing-call-story-director").textContent(), /tone on prompt\.segment@1: error — Error: the tone table is empty/);
  await problemsPage.locator('[data-tab="Prompt"]').click();
  assert.match(await problemsPage.locator('[data-testid="prompt-warning"][data-kind="missing-segment"]').textContent(), /story-director\/tone failed .*missing from the prompt/);
  const lastGood = structuredClone(broken);
  const plugin = lastGood.plugins.find((p) => p.name === "story-director");
  plugin.status = "last-good";
  plugin.diagnostics = [{ code: "entry-syntax", message: "unexpected token", file: "story-director/server/index.js", line: 53, column: 1 }];
  await problemsPage.evaluate((s) => window.__fakeSnapshot(s), lastGood);
  await problemsPage.locator('[data-testid="prompt-warning"][data-kind="last-good"]').waitFor();
  assert.ok((await problemsPage.getByTestId("last-good-mark").count()) >= 1, "its segments are marked as the old version's");
  await problemsPage.close();
});

test("every panel passes axe with no serious or critical violations", async () => {
  const { context, page: a11y } = await freshPage();
  const tabs = await a11y.getByRole("tab").evaluateAll((ts) => ts.map((t) => t.dataset.tab));
  const found = [];
  for (const name of tabs) {
    await a11y.locator(`[data-tab="${name}"]`).click();
    await a11y.waitForTimeout(name === "Session" ? 600 : 100);
    const result = await new AxeBuilder({ page: a11y }).analyze();
    for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
      found.push(`${name}: ${v.id} (${v.impact}) ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
    }
  }
  await context.close();
  assert.deepEqual(found, []);
});

// The words every panel shows, after a played turn and a test run, read as the author reads
// them (code, JSON and editors left out): no word runs into a parenthesis or a dash, and no count
// of one is followed by a plural. Svelte drops the space at the start of a block (`{#if x} (…)`),
// which is how "2283(1921–2734)" and "tokens(lore-book/…)" once reached the screen.
test("no panel runs words together (into a parenthesis, a dash or a separator) or says '1 segments'", async () => {
  const { context, page: reader } = await freshPage();
  await reader.locator('[data-tab="Playtest"]').click();
  await reader.getByTestId("player-message").fill("I climb the stairs.");
  await reader.getByTestId("play").click();
  await reader.getByText("Scripted narrator").first().waitFor();
  await reader.locator('[data-tab="Tests"]').click();
  await reader.getByTestId("tests-run").click();
  await reader.getByTestId("tests-summary").waitFor();
  await reader.addStyleTag({ content: "pre, code, textarea, input, select, .cm-editor, .json { display: none !important; }" });
  const tabs = await reader.getByRole("tab").evaluateAll((ts) => ts.map((t) => t.dataset.tab));
  const found = [];
  for (const name of tabs) {
    await reader.locator(`[data-tab="${name}"]`).click();
    await reader.waitForTimeout(name === "Session" ? 600 : 100);
    const text = await reader.locator("#panel").innerText();
    for (const line of text.split("\n")) {
      for (const [rule, pattern] of [
        ["a word runs into a parenthesis", /[\p{L}\p{N}%)](?=\()|\)(?=[\p{L}\p{N}])/gu],
        ["a word runs into a dash", /\S(?=—)|—(?=\S)/gu],
        ["a word runs into a separator", /[^\s(](?=[·→])|[·→](?=[^\s)])/gu],
        ["one of a plural", /(?<![\d.,–-])\b1 (?!(?:s|ms|of|in|per)\b)[a-z]+s\b/g],
      ]) {
        for (const m of line.matchAll(pattern)) found.push(`${name}: ${rule}: …${line.slice(Math.max(0, m.index - 30), m.index + 30)}…`);
      }
    }
  }
  await context.close();
  assert.deepEqual(found, []);
});

test("the turn inspector diffs a turn's segments against the turn before", async () => {
  const after = await fixture("after-turn.json");
  const first = after.turns[0];
  // What a turn sent is kept with it: the second turn's tone segment said something else.
  const second = { ...structuredClone(first), turnId: "turn-4" };
  second.sent.find((s) => s.key === "segment story-director/tone").text = "Keep a grave, patient narrative voice.";
  const sent = structuredClone((await fixture("turn-previews.json"))[first.turnId].preview);
  const two = { ...after, turns: [first, second] };
  const { context, page: p } = await freshPage();
  await p.evaluate(([s, prompts]) => window.__fakeSnapshot(s, prompts), [two, { "turn-4": sent }]);
  await p.locator('[data-tab="Playtest"]').click();
  const change = p.getByTestId("turn-change");
  await change.first().waitFor();
  assert.equal(await change.count(), 1);
  assert.match(await change.textContent(), /story-director\/tone/);
  assert.equal((await change.locator("ins").textContent()).trim(), "patient");
  await p.getByTestId("turn-pick").first().click();
  assert.equal(await p.getByTestId("turn-change").count(), 0, "the first turn has no turn before it");
  await context.close();
});

test("a long prompt's segment table renders on request", async () => {
  const demo = await fixture("snapshot.json");
  const long = structuredClone(demo);
  const base = long.preview.segments.filter((s) => s.included);
  long.preview.segments = Array.from({ length: 90 }, (_, i) => ({ ...base[i % base.length], plugin: `gen-${String(i).padStart(3, "0")}` }));
  const { context, page: p } = await freshPage();
  assert.equal(await p.getByTestId("segments").count(), 1, "a short prompt shows its table");
  await p.evaluate((s) => window.__fakeSnapshot(s), long);
  await p.getByTestId("show-segments").waitFor();
  await p.locator('[data-tab="Stage"]').click();
  await p.locator('[data-tab="Prompt"]').click();
  assert.equal(await p.locator('[data-testid="system-prompt"] [data-segment] pre').count(), 0, "a long prompt opens with its segment texts folded");
  assert.equal(await p.getByTestId("segments").count(), 0);
  assert.match(await p.getByTestId("show-segments").textContent(), /90 rows/);
  await p.getByTestId("show-segments").click();
  assert.equal(await p.getByTestId("segments").locator("tbody tr").count(), 90);
  await context.close();
});

test("200 plugins: a panel shows its first rows in the first frame and the rest right after", async () => {
  const demo = await fixture("snapshot.json");
  const many = structuredClone(demo);
  const base = demo.plugins;
  many.plugins = Array.from({ length: 200 }, (_, i) => ({ ...structuredClone(base[i % base.length]), name: `gen-${String(i).padStart(3, "0")}` }));
  many.plugins.forEach((p) => p.providers.forEach((r) => (r.id = `${r.id}-${p.name}`)));
  const { context, page: p } = await freshPage();
  await p.evaluate((s) => window.__fakeSnapshot(s), many);
  for (const [tab, selector, rows] of [["Plugins", '[data-testid="plugins"] tbody tr', 200], ["Providers", '[data-testid="providers"] tr[data-testid="not-called"], [data-testid="providers"] tr[data-testid="other-slot"], [data-testid="providers"] tr[data-call]', null]]) {
    // Rows in the DOM once the click's update is flushed, before the first frame is painted.
    const first = await p.evaluate(async ([t, sel]) => {
      document.querySelector(`[data-tab="${t}"]`).click();
      await Promise.resolve();
      await Promise.resolve();
      return document.querySelectorAll(sel).length;
    }, [tab, selector]);
    const container = p.getByTestId(tab.toLowerCase());
    const total = Number(await container.getAttribute("data-rows"));
    if (rows !== null) assert.equal(total, rows);
    assert.ok(total > 100, `${tab}: ${total} rows in all`);
    assert.ok(first > 0 && first < total / 2, `${tab}: ${first} of ${total} rows in the first frame`);
    await p.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length === n, [selector, total]);
  }
  await context.close();
});

test("a reload leaves the rows it did not change alone: same elements, no DOM writes", async () => {
  const [initial, reloaded] = [await fixture("snapshot.json"), await fixture("after-reload.json")];
  const content = (s) => new Map(s.preview.segments.map((r) => [`${r.plugin}/${r.id}`, JSON.stringify(r)]));
  const [a, b] = [content(initial), content(reloaded)];
  const kept = [...a.keys()].filter((k) => b.get(k) === a.get(k) && initial.preview.prompt.system.blocks.some((block) => block.segments.includes(k)));
  const edited = [...a.keys()].filter((k) => b.has(k) && b.get(k) !== a.get(k));
  assert.ok(kept.length >= 2 && edited.length >= 1, `${kept.length} unchanged and ${edited.length} changed segments`);
  const { context, page: p } = await freshPage();
  const rows = (keys) => keys.map((k) => `[data-testid="system-prompt"] [data-segment="${k}"]`);
  // Each row is tagged and watched; the reload must neither replace nor write into them.
  await p.evaluate(([unchanged, changed]) => {
    window.__writes = { unchanged: 0, changed: 0 };
    for (const [selectors, kind] of [[unchanged, "unchanged"], [changed, "changed"]]) {
      for (const selector of selectors) {
        const row = document.querySelector(selector);
        row.__tagged = true;
        new MutationObserver((records) => (window.__writes[kind] += records.length)).observe(row, { subtree: true, childList: true, characterData: true, attributes: true });
      }
    }
  }, [rows(kept), rows(edited)]);
  await p.evaluate(() => window.__fakeReload());
  await p.waitForFunction(() => document.querySelector('[data-testid="reload-note"]').hasAttribute("data-apply-ms"));
  const after = await p.evaluate(([unchanged, changed]) => ({ unchanged: unchanged.map((s) => document.querySelector(s)?.__tagged === true), changed: changed.map((s) => document.querySelector(s)?.__tagged === true), writes: window.__writes }), [rows(kept), rows(edited)]);
  assert.deepEqual(after.unchanged, kept.map(() => true), "the unchanged rows are the same elements");
  assert.equal(after.writes.unchanged, 0, "nothing was written into the unchanged rows");
  assert.ok(after.writes.changed > 0, "the changed rows were updated");
  assert.match(await p.locator('[data-segment="story-director/tone"] pre').textContent(), /patient/);
  await context.close();
});

test("Open: the native picker chooses the session file and the folder, which opens; cancelling changes nothing", async () => {
  const { context, page: p } = await freshPage();
  await p.locator('[data-tab="Open"]').click();
  const calls = () => p.evaluate(() => window.__fakeCalls.filter((c) => c[0] === "pickPath" || c[0] === "open"));
  await p.getByTestId("choose-folder").click();
  await p.waitForFunction(() => window.__fakeCalls.some((c) => c[0] === "pickPath"));
  assert.deepEqual(await calls(), [["pickPath", "folder"]], "cancelled: nothing opens");
  assert.equal(await p.getByTestId("open-plugins").inputValue(), "");
  await p.evaluate(() => (window.__fakePick = { folder: "/home/author/my-plugins", session: "/home/author/my-plugins/demo.session.yaml" }));
  await p.getByTestId("choose-session").click();
  await p.waitForFunction(() => document.querySelector('[data-testid="open-session"]').value !== "");
  assert.equal(await p.getByTestId("open-session").inputValue(), "/home/author/my-plugins/demo.session.yaml");
  await p.getByTestId("choose-folder").click();
  await p.waitForFunction(() => window.__fakeCalls.some((c) => c[0] === "open"));
  assert.deepEqual((await calls()).slice(1), [["pickPath", "session"], ["pickPath", "folder"], ["open", "/home/author/my-plugins", "/home/author/my-plugins/demo.session.yaml"]]);
  // A successful open shows what was opened and says so.
  await p.getByTestId("opened").waitFor();
  assert.match(await p.getByTestId("opened").textContent(), /^Opened /);
  assert.equal(await p.locator('[data-tab="Prompt"]').getAttribute("aria-selected"), "true");
  await p.screenshot({ path: join(shots, "browser-open-picker.png") });
  await context.close();
});

test("Providers: a provider of another slot is listed with that reason, and every call says whether it was cached and why (not)", async () => {
  const turned = structuredClone(await fixture("after-turn.json"));
  const cachedCall = turned.preview.calls.find((c) => c.cached);
  assert.ok(cachedCall, "the fixture has a call answered from the memo");
  const clock = turned.preview.calls.find((c) => !c.cached && c.point === "prompt.segment@1");
  clock.notCached = "it read the clock (Date.now)";
  const { context, page: p } = await freshPage();
  await p.evaluate((s) => window.__fakeSnapshot(s), turned);
  await p.locator('[data-tab="Providers"]').click();
  const other = p.locator('table[data-chain="ui.slot@1 → stage.music@1"] [data-testid="other-slot"]');
  assert.match(await other.locator('[data-provider="scene-stage/backdrop"]').textContent(), /scene-stage\/backdrop → stage\.backdrop@1/);
  assert.match(await other.textContent(), /not called.*other slot: they serve another slot of ui\.slot@1/s);
  assert.equal(await other.locator('[data-provider="soundtrack/music"]').count(), 0, "not the slot's own provider");
  const row = (c) => p.locator(`tr[data-call="${c.slot ?? c.point}|${c.pluginId}/${c.providerId}"] [data-testid="cache-reason"]`).first();
  assert.match(await row(cachedCall).textContent(), /^cached: same input and data as before/);
  assert.ok(cachedCall.ranMs != null, "a memo answer says what its run took");
  assert.match(await row(cachedCall).textContent(), new RegExp(`; its first run took ${cachedCall.ranMs.toFixed(2)} ms$`));
  assert.equal(await row(clock).textContent(), "not cached: it read the clock (Date.now)");
  await p.screenshot({ path: join(shots, "browser-providers-reasons.png"), fullPage: true });
  await context.close();
});

test("a problem with a place opens it in the author's editor at its line and column", async () => {
  const broken = await fixture("snapshot.json");
  const plugin = broken.plugins.find((p) => p.name === "story-director");
  plugin.diagnostics = [{ code: "entry-syntax", message: "syntax error: the `{` opened at 4:33 is never closed (the file ends first)", file: "story-director/server/index.js", line: 4, column: 33 }];
  const { context, page: p } = await freshPage();
  await p.evaluate((s) => window.__fakeSnapshot(s), broken);
  await p.locator('[data-tab="Problems"]').click();
  const row = p.locator('[data-testid="problem"][data-code="entry-syntax"]');
  assert.match(await row.textContent(), /story-director\/server\/index\.js:4:33/);
  await row.getByTestId("open-in-editor").click();
  await p.getByTestId("editor-opened").waitFor();
  assert.equal(await p.getByTestId("editor-opened").textContent(), "Ran code --goto story-director/server/index.js:4:33");
  const calls = await p.evaluate(() => window.__fakeCalls);
  assert.deepEqual(calls.filter((c) => c[0] === "openInEditor").at(-1), ["openInEditor", "story-director/server/index.js", 4, 33]);
  await context.close();
});

test("New plugin… starts a plugin in the open folder, and a bad id says why", async () => {
  await page.locator('[data-tab="Plugins"]').click();
  await page.getByTestId("new-plugin").click();
  const form = page.getByTestId("new-plugin-form");
  await form.getByTestId("new-plugin-id").fill("Weather");
  await form.getByTestId("new-plugin-create").click();
  await page.getByTestId("error").filter({ hasText: "is not a plugin id" }).waitFor();
  await page.getByTestId("dismiss-error").click();
  await form.getByTestId("new-plugin-id").fill("weather-report");
  await form.locator('[data-point="ui.slot@1:stage.music@1"]').check();
  await form.getByTestId("new-plugin-create").click();
  await page.getByTestId("new-plugin-done").waitFor();
  assert.match(await page.getByTestId("new-plugin-done").textContent(), /^Created plugins-sample\/weather-report/);
  const made = (await fakeCalls()).filter((c) => c[0] === "newPlugin").at(-1);
  assert.deepEqual(made, ["newPlugin", "weather-report", ["prompt.segment@1", "ui.slot@1:stage.music@1"], false]);
});

test("every panel has a keyboard shortcut", async () => {
  const keys = await page.locator('nav [role="tab"]').evaluateAll((tabs) => tabs.map((t) => t.getAttribute("aria-keyshortcuts")));
  assert.equal(keys.length, 12);
  assert.deepEqual(keys, ["Alt+1", "Alt+2", "Alt+3", "Alt+4", "Alt+5", "Alt+6", "Alt+7", "Alt+8", "Alt+9", "Alt+0", "Alt+-", "Alt+="]);
  await page.keyboard.press("Alt+Equal");
  assert.equal(await page.locator('[data-tab="Open"]').getAttribute("aria-selected"), "true");
  await page.keyboard.press("Alt+Minus");
  assert.equal(await page.locator('[data-tab="Session"]').getAttribute("aria-selected"), "true");
});

test("the header and tab bar stay in view on a long page, and no text of a panel is under 13 px", async () => {
  for (const tab of ["Prompt", "Providers", "Plugins", "Playtest", "Problems", "Stage"]) {
    await page.locator(`[data-tab="${tab}"]`).click();
    // Every element that holds text of its own, but for counters and chips (badges, copy buttons).
    const small = await page.evaluate(() =>
      [...document.querySelectorAll("body *")]
        .filter((e) => [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()))
        .filter((e) => e.getClientRects().length && !e.closest(".count, .badge, .copy, .tie, .cm-editor, svg"))
        .map((e) => [e.tagName + "." + e.className, parseFloat(getComputedStyle(e).fontSize)])
        .filter(([, size]) => size < 13),
    );
    assert.deepEqual(small, [], `${tab}: text under 13 px`);
  }
  await page.locator('[data-tab="Providers"]').click();
  await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  const bar = await page.getByTestId("top-bar").boundingBox();
  assert.ok(bar && bar.y === 0, "the bar is at the top of the window after scrolling");
  assert.ok(await page.locator('[data-tab="Prompt"]').isVisible());
  await page.evaluate(() => window.scrollTo(0, 0));
});

test("the providers panel filters its chains and keeps the memo's usual reason out of the rows", async () => {
  await page.locator('[data-tab="Providers"]').click();
  const chains = page.locator('[data-testid="providers"] table');
  const before = await chains.count();
  await page.getByTestId("providers-filter").fill("soundtrack");
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="providers"] table').length < n, before);
  const keys = await chains.evaluateAll((tables) => tables.map((t) => t.getAttribute("data-chain")));
  assert.ok(keys.length > 0 && keys.length < before, `${keys.length} of ${before} chains`);
  for (const table of await chains.all()) assert.match(await table.textContent(), /soundtrack/);
  await page.getByTestId("providers-filter").fill("no-such-plugin");
  await page.getByTestId("providers-none").waitFor();
  await page.getByTestId("providers-filter").fill("");
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="providers"] table').length === n, before);
  // The usual "no confirmed earlier answer" is no row's text any more (it is in the tooltip).
  assert.doesNotMatch(await page.getByTestId("providers").textContent(), /no confirmed earlier answer/);
});

test("the turn inspector diffs a turn against any other played turn, earlier to later", async () => {
  const after = await fixture("after-turn.json");
  const first = after.turns[0];
  const [second, third] = [{ ...structuredClone(first), turnId: "turn-4" }, { ...structuredClone(first), turnId: "turn-5" }];
  const part = (turn, key) => turn.sent.find((s) => s.key === key);
  part(second, "segment story-director/tone").text = "Keep a grave, patient narrative voice.";
  part(third, "segment story-director/tone").text = "Keep a grave, patient narrative voice.";
  part(third, "segment story-director/focus").text += " Mind the bells.";
  const sentFirst = (await fixture("turn-previews.json"))[first.turnId].preview;
  const [sentSecond, sentThird] = [structuredClone(sentFirst), structuredClone(sentFirst)];
  const { context, page: p } = await freshPage();
  await p.evaluate(([s, prompts]) => window.__fakeSnapshot(s, prompts), [{ ...after, turns: [first, second, third] }, { "turn-4": sentSecond, "turn-5": { preview: sentThird, withNewerPlugins: true } }]);
  await p.locator('[data-tab="Playtest"]').click();
  await p.getByTestId("turn-pick").nth(2).click();
  const changes = () => p.getByTestId("turn-change").evaluateAll((all) => all.map((c) => c.querySelector(".muted").textContent));
  await p.getByTestId("turn-change").first().waitFor();
  assert.equal(await p.getByTestId("turn-compare").inputValue(), "|turn-4", "the turn before by default");
  assert.match(await p.getByTestId("turn-newer-plugins").textContent(), /reloaded after turn-5.*comparisons below use what it sent/, "a recomputed prompt says it may differ from what was sent");
  assert.deepEqual(await changes(), ["segment story-director/focus"]);
  await p.getByTestId("turn-compare").selectOption(`|${first.turnId}`);
  await p.getByTestId("turn-compare-title").filter({ hasText: `from ${first.turnId} to turn-5` }).waitFor();
  assert.deepEqual((await changes()).sort(), ["segment story-director/focus", "segment story-director/tone"]);
  await p.getByTestId("turn-pick").first().click();
  await p.getByTestId("turn-compare").selectOption("|turn-5");
  await p.getByTestId("turn-compare-title").filter({ hasText: `from ${first.turnId} to turn-5` }).waitFor();
  assert.deepEqual((await changes()).sort(), ["segment story-director/focus", "segment story-director/tone"], "from the earlier to the later turn");
  assert.equal((await p.getByTestId("turn-change").filter({ hasText: "tone" }).locator("ins").textContent()).trim(), "patient");
  await p.screenshot({ path: join(shots, "browser-turn-compare.png"), fullPage: true });
  await context.close();
});

test("About says the studio's version, the SDK it mirrors and the contracts, as --version does", async () => {
  const about = await fixture("about.json");
  const { context, page: own } = await freshPage();
  await own.getByTestId("about-button").click();
  const box = own.getByTestId("about");
  await box.waitFor();
  assert.equal(await own.getByTestId("about-version").textContent(), about.version);
  assert.equal(await own.getByTestId("about-sdk").textContent(), `@covel/plugin-handlers-utils ${about.sdkVersion}`);
  const text = await box.textContent();
  for (const contract of [...about.extensionPoints, ...about.slots]) assert.ok(text.includes(contract), contract);
  const violations = (await new AxeBuilder({ page: own }).include('[data-testid="about"]').analyze()).violations;
  assert.deepEqual(violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(" | ")}`), []);
  await own.screenshot({ path: join(shots, "browser-about.png") });
  await box.getByRole("button", { name: "Close" }).click();
  assert.equal(await box.count(), 0);
  await context.close();
});

test("a compaction run that found nothing to compact says so, as covel compact does, not `output: null`", async () => {
  const next = structuredClone(await fixture("after-reload.json"));
  const c = next.compaction;
  next.compaction.lastRun = {
    windows: c.windows, budget: c.budget, estimatedTokens: c.estimatedTokens, thresholdTokens: c.thresholdTokens,
    triggered: true, input: {}, output: null, providedBy: "history-compaction", calls: [], events: [], consecutiveFailures: 0,
    verdict: { nothingToCompact: true, accepted: true, rules: [{ rule: "output-shape", ok: true, detail: "null: nothing to compact" }], totalSegments: 0, totalTokens: 0 },
  };
  await page.evaluate((s) => window.__fakeSnapshot(s), next);
  await page.locator('[data-tab="Compaction"]').click();
  assert.equal(await page.getByTestId("compaction-verdict").textContent(), "Verdict: nothing to compact");
  assert.match(await page.getByTestId("compaction-output-null").textContent(), /returned null: it found nothing to compact/);
  await page.locator('[data-tab="Prompt"]').click();
});

test("a failed open is shown once, with its code and place, and can be dismissed", async () => {
  const { context, page: own } = await freshPage();
  await own.locator('[data-tab="Open"]').click();
  await own.getByPlaceholder("/path/to/plugins").fill("/work/missing-plugins");
  await own.getByRole("button", { name: "Open", exact: true }).click();
  await own.getByTestId("open-error").waitFor();
  assert.match(await own.getByTestId("open-error").textContent(), /\[missing-file\]/);
  assert.equal(await own.getByTestId("error").count(), 0, "not a second time as the action's error");
  await own.getByTestId("dismiss-open-error").click();
  assert.equal(await own.getByTestId("open-error").count(), 0);
  await context.close();
});

test("Play from here starts a branch beside the one played; turns of two branches compare; a replay says per turn what changed", async () => {
  const after = await fixture("after-turn.json");
  const first = after.turns[0];
  const second = { ...structuredClone(first), turnId: "turn-4", playerMessage: "I climb the stairs." };
  second.reply.text = "The stairs are slick with weed.";
  second.sent.find((s) => s.key === "player input").text = "I climb the stairs.";
  const { context, page: p } = await freshPage();
  await p.evaluate((s) => window.__fakeSnapshot(s), { ...after, turns: [first, second] });
  await p.locator('[data-tab="Playtest"]').click();
  const branches = p.getByTestId("branch");
  assert.equal(await branches.count(), 1, "one branch until a fork");
  await p.getByTestId("turn-pick").first().click();
  await p.getByTestId("play-from-here").click();
  await p.locator('[data-testid="branch"][aria-pressed="true"]', { hasText: `from ${first.turnId} of main` }).waitFor();
  assert.equal(await branches.count(), 2);
  assert.equal(await p.getByTestId("turn-pick").count(), 1, "the branch holds the turns up to the fork");
  // Any turn of the other branch can be compared with.
  await p.getByTestId("turn-compare").selectOption("main|turn-4");
  await p.getByTestId("turn-compare-title").filter({ hasText: `from main · turn-4 to ${first.turnId}` }).waitFor();
  const keys = await p.getByTestId("turn-change").evaluateAll((all) => all.map((c) => c.querySelector(".muted").textContent));
  assert.deepEqual(keys, ["player input", "reply"]);
  await p.screenshot({ path: join(shots, "browser-branches.png"), fullPage: true });
  // Back to main: its two turns, kept.
  await p.locator('[data-testid="branch"][data-branch="main"]').click();
  await p.locator('[data-testid="branch"][data-branch="main"][aria-pressed="true"]').waitFor();
  assert.equal(await p.getByTestId("turn-pick").count(), 2);
  // Replay with my change: a new branch, each turn against the one it replays.
  await p.getByTestId("replay-branch").click();
  await p.getByTestId("replay-changes").waitFor();
  assert.equal(await p.getByTestId("replay-turn").count(), 2);
  assert.match(await p.getByTestId("replay-changes").textContent(), /replay of main/);
  assert.match(await p.getByTestId("replay-turn").first().textContent(), /same reply, events, slots and usage/);
  assert.deepEqual((await p.evaluate(() => window.__fakeCalls)).filter((c) => ["forkTurn", "switchBranch", "replayBranch"].includes(c[0])), [["forkTurn", first.turnId], ["switchBranch", "main"], ["replayBranch"]]);
  await context.close();
});

test("the story model picker lists the models the local server reports and writes the choice into the session draft", async () => {
  const { context, page: p } = await freshPage();
  await p.locator('[data-tab="Session"]').click();
  const editor = p.locator('[data-testid="session-editor"] .cm-content');
  await editor.waitFor();
  // Each choice is a structured edit of the draft (the Session panel's Save writes it).
  const edits = async () => (await p.evaluate(() => window.__fakeCalls)).filter((c) => c[0] === "applySessionEdits").map((c) => c[1][0]);
  await p.getByTestId("story-backend").selectOption("openai");
  await p.getByTestId("story-base-url").waitFor();
  await p.getByTestId("story-base-url").fill("http://localhost:11434/v1");
  await p.getByTestId("story-base-url").press("Tab");
  await p.getByText("unsaved changes").waitFor();
  await p.waitForFunction(() => window.__fakeCalls.filter((c) => c[0] === "applySessionEdits").length === 2);
  assert.deepEqual(await edits(), [
    { kind: "set", path: ["models", "story", "backend"], value: "openai" },
    { kind: "set", path: ["models", "story", "baseUrl"], value: "http://localhost:11434/v1" },
  ]);
  await p.getByTestId("list-models").click();
  const listed = p.getByTestId("server-models").locator("button");
  await listed.first().waitFor();
  assert.deepEqual(await listed.allTextContents(), ["llama3.1:8b", "qwen2.5:7b"]);
  assert.deepEqual((await p.evaluate(() => window.__fakeCalls)).filter((c) => c[0] === "listModels").at(-1), ["listModels", "openai", "http://localhost:11434/v1", null]);
  await listed.nth(1).click();
  await p.locator('[data-testid="server-models"] button[aria-pressed="true"]', { hasText: "qwen2.5:7b" }).waitFor();
  assert.deepEqual((await edits()).at(-1), { kind: "set", path: ["models", "story", "model"], value: "qwen2.5:7b" });
  assert.equal(await p.getByTestId("story-model-name").inputValue(), "qwen2.5:7b");
  await p.screenshot({ path: join(shots, "browser-model-picker.png") });
  // A server that refuses says why, next to the button.
  await p.evaluate(() => (window.__fakeModels = "openai request failed: http://localhost:11434/v1/models: connection refused"));
  await p.getByTestId("list-models").click();
  await p.getByTestId("models-problem").filter({ hasText: "connection refused" }).waitFor();
  await context.close();
});

test("a replay miss in the Tests panel offers to re-record the changed turns, asks first, and says what was re-recorded", async () => {
  const run = structuredClone(await fixture("tests.json"));
  const session = run.sessions[0];
  session.passed = false;
  session.turns[0].passed = false;
  session.turns[0].error = "replay miss: none of the 3 recorded anthropic requests equals this request; nearest is exchange #2 (97% similar). Where this request differs from it:\n  /messages/3/content: …";
  const after = structuredClone(await fixture("tests.json"));
  after.sessions[0].rerecord = { recording: "tests/replayed.recording.json", status: "rewritten", turns: [session.turns[0].turnId], kept: 2, rerecorded: 1, dropped: 1 };
  const { context, page: p } = await freshPage();
  await p.evaluate(([a, b]) => ((window.__fakeTests = a), (window.__fakeRerecordTests = b)), [run, after]);
  await p.locator('[data-tab="Tests"]').click();
  await p.getByTestId("tests-run").click();
  await p.getByTestId("rerecord-ask").click();
  await p.getByTestId("rerecord-confirm").waitFor();
  const runs = async () => (await p.evaluate(() => window.__fakeCalls)).filter((c) => c[0] === "runTests");
  assert.equal((await runs()).length, 1, "nothing is sent before the author says so");
  await p.getByTestId("rerecord-run").click();
  await p.getByTestId("rerecord-result").waitFor();
  assert.deepEqual((await runs()).at(-1), ["runTests", false, session.session, true]);
  assert.match(await p.getByTestId("rerecord-result").textContent(), new RegExp(`Re-recorded ${session.turns[0].turnId} into tests/replayed.recording.json \\(2 kept, 1 re-recorded, 1 dropped\\)`));
  await context.close();
});

test("one click to the source: a provider, a segment, a slot value and a turn's tool call open their registration site in the editor", async () => {
  const snapshot = await fixture("snapshot.json");
  const after = await fixture("after-turn.json");
  const { context, page: p } = await freshPage();
  const opened = async () => (await p.evaluate(() => window.__fakeCalls)).filter((c) => c[0] === "openInEditor").at(-1);
  const site = (plugin, point, id) => snapshot.plugins.find((x) => x.name === plugin).inventory.extensions.find((e) => e.point === point && e.id === id).site;
  // A segment in the Prompt panel's table.
  const tone = site("story-director", "prompt.segment@1", "tone");
  assert.ok(tone && tone.line > 0, "the sample's registration sites are known");
  if (!(await p.getByTestId("segments").isVisible())) await p.getByTestId("show-segments").click();
  await p.locator(`[data-testid="segments"] [data-site="${tone.file}:${tone.line}:${tone.column}"]`).click();
  await p.waitForFunction(() => window.__fakeCalls.some((c) => c[0] === "openInEditor"));
  assert.deepEqual(await opened(), ["openInEditor", tone.file, tone.line, tone.column]);
  assert.match(await p.locator(`[data-testid="segments"] [data-site="${tone.file}:${tone.line}:${tone.column}"]`).textContent(), /server\/index\.js:\d+:\d+/);
  // A provider in the Providers panel.
  await p.locator('[data-tab="Providers"]').click();
  const first = p.locator('[data-testid="providers"] [data-testid="source-link"]').first();
  await first.click();
  const [file, line, column] = (await first.getAttribute("data-site")).split(/:(?=\d+:\d+$)|:(?=\d+$)/);
  assert.deepEqual(await opened(), ["openInEditor", file, Number(line), Number(column)]);
  // A slot value on the Stage panel.
  await p.locator('[data-tab="Stage"]').click();
  assert.ok((await p.locator('details [data-testid="source-link"]').count()) > 0, "slot values link to their providers");
  // A tool call of a played turn.
  await p.evaluate((s) => window.__fakeSnapshot(s), after);
  await p.locator('[data-tab="Playtest"]').click();
  const tool = p.locator('[data-testid="loop-step"][data-kind="tool"] [data-testid="source-link"]').first();
  await tool.click();
  const setScene = after.plugins.find((x) => x.name === "scene-stage").inventory.sites.find((s) => s.key === "tool:set-scene").site;
  assert.deepEqual(await opened(), ["openInEditor", setScene.file, setScene.line, setScene.column]);
  await p.screenshot({ path: join(shots, "browser-source-links.png") });
  await context.close();
});

test("an empty folder: every panel says what would appear there and how to make it appear", async () => {
  const snapshot = structuredClone(await fixture("snapshot.json"));
  const empty = {
    ...snapshot,
    plugins: [],
    preview: { ...snapshot.preview, slots: [], calls: [], segments: [], worldContext: { ...snapshot.preview.worldContext, providedBy: undefined, snapshot: null, error: undefined, calls: [] } },
  };
  delete empty.preview.worldContext.providedBy;
  const { context, page: p } = await freshPage();
  await p.evaluate((s) => window.__fakeSnapshot(s), empty);
  for (const [tab, id, said] of [
    ["Plugins", "empty-plugins", /no plugins yet.*New plugin/],
    ["Providers", "empty-providers", /No provider ran for this session.*provideExtension/],
    ["World", "empty-world", /No plugin provides `?session\.world-context@1/],
    ["Stage", "empty-stage", /No plugin fills a slot in this session/],
    ["Playtest", "no-turns", /Play a turn/],
  ]) {
    await p.locator(`[data-tab="${tab}"]`).click();
    assert.match(await p.getByTestId(id).textContent(), said, tab);
  }
  await context.close();
});

test("labels are labels: every field of the Open, Prompt, Cache, Providers and Playtest panels has a visible label, not only a placeholder", async () => {
  const { context, page: p } = await freshPage();
  const unlabelled = [];
  for (const tab of ["Open", "Prompt", "Cache", "Providers", "Playtest"]) {
    await p.locator(`[data-tab="${tab}"]`).click();
    await p.waitForTimeout(200);
    const found = await p.locator("#panel").evaluate((panel) =>
      [...panel.querySelectorAll("input:not([type=checkbox]):not([type=hidden]), select, textarea")]
        .filter((e) => e.offsetParent !== null && !e.closest("table"))
        .filter((e) => ![...(e.labels ?? [])].some((l) => l.textContent.replace(e.value ?? "", "").trim()))
        .map((e) => e.dataset.testid ?? e.outerHTML.slice(0, 80)),
    );
    unlabelled.push(...found.map((f) => `${tab}: ${f}`));
  }
  await context.close();
  assert.deepEqual(unlabelled, []);
});

test("Plugins and Problems have a filter: the rows that match, and how many of how many", async () => {
  const { context, page: p } = await freshPage();
  await p.locator('[data-tab="Plugins"]').click();
  const all = await p.locator('[data-testid="plugins"] tbody tr').count();
  await p.getByTestId("plugins-filter").fill("stage.cast");
  await p.waitForFunction((n) => document.querySelectorAll('[data-testid="plugins"] tbody tr').length < n, all);
  const names = await p.locator('[data-testid="plugins"] tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.plugin));
  assert.deepEqual(names, ["scene-stage"]);
  assert.equal(await p.getByTestId("plugins-shown").textContent(), `1 of ${all} plugins`);
  await p.locator('[data-tab="Problems"]').click();
  const problems = await p.getByTestId("problem").count();
  assert.ok(problems >= 1, "the demo has its one warning");
  await p.getByTestId("problems-find").fill("no such words");
  await p.waitForFunction(() => document.querySelectorAll('[data-testid="problem"]').length === 0);
  assert.equal(await p.getByTestId("problems-shown").textContent(), `0 of ${problems} shown`);
  await p.getByTestId("problems-find").fill("depth-segment");
  await p.waitForFunction(() => document.querySelectorAll('[data-testid="problem"]').length === 1);
  assert.equal(await p.getByTestId("problem").getAttribute("data-code"), "depth-segment-moves");
  assert.equal(await p.getByTestId("problems-shown").textContent(), `1 of ${problems} shown`);
  await context.close();
});

test("a failed attempt and the turn played after it share an id, and each can be inspected", async () => {
  const after = await fixture("after-turn.json");
  const played = after.turns[0];
  const failed = { ...structuredClone(played), reply: undefined, error: "the turn was cancelled; nothing was appended", steps: [], events: [], slotChanges: [] };
  const { context, page: p } = await freshPage();
  await p.evaluate((s) => window.__fakeSnapshot(s), { ...after, turns: [failed, played] });
  await p.locator('[data-tab="Playtest"]').click();
  const picks = p.getByTestId("turn-pick");
  assert.deepEqual(await picks.allTextContents(), [`${played.turnId} ✗`, played.turnId]);
  await picks.first().click();
  await p.getByTestId("turn-error").waitFor();
  await picks.nth(1).click();
  await p.getByTestId("turn-reply").waitFor();
  assert.equal(await p.getByTestId("turn-error").count(), 0, "the played turn, not the failed attempt");
  assert.equal(await picks.nth(1).getAttribute("aria-pressed"), "true");
  await context.close();
});
