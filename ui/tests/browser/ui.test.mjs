// UI tests in Chromium: the fake-backend build served over HTTP, fed by the Rust tests'
// fixtures. Needs Debian's chromium (/usr/bin/chromium) and `npm run build:fake` first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile, mkdir } from "node:fs/promises";
import { extname, join, resolve } from "node:path";
import { chromium } from "playwright-core";

const root = resolve(import.meta.dirname, "../../dist-fake");
const shots = resolve(import.meta.dirname, "../../test-results");
const types = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".json": "application/json" };
let server;
let browser;
let page;
let url;

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
  browser = await chromium.launch({
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

test("plugin content is rendered as text, never as HTML", async () => {
  const glossary = await page.locator('[data-segment="lore-book/glossary"] pre').textContent();
  assert.match(glossary, /<glossary>/);
  assert.equal(await page.locator('[data-segment="lore-book/glossary"] glossary').count(), 0);
});

test("a reload highlights what changed", async () => {
  await page.evaluate(() => window.__fakeReload());
  await page.locator('.changed[data-segment="story-director/tone"]').waitFor();
  assert.match(await page.locator('[data-segment="story-director/tone"] pre').textContent(), /patient/);
});

test("the plugins panel lists status and providers", async () => {
  await page.locator('[data-tab="Plugins"]').click();
  assert.equal(await page.getByTestId("status-story-director").textContent(), "active");
  assert.match(await page.getByTestId("plugins").textContent(), /ui\.slot@1 · cast → stage\.cast@1/);
});

test("the stage renders backdrop, cast, choices, status bar and music", async () => {
  await page.locator('[data-tab="Stage"]').click();
  assert.match(await page.getByTestId("backdrop").textContent(), /The Harbour/);
  assert.ok(await page.locator('.actor.active[data-actor="tavi"]').isVisible());
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

test("playing a turn updates the chat and the compaction panel", async () => {
  await page.locator('[data-tab="Playtest"]').click();
  await page.getByTestId("player-message").fill("I swim to the bell tower.");
  await page.getByTestId("play").click();
  await page.getByText("Scripted narrator").first().waitFor();
  await page.locator('[data-tab="Compaction"]').click();
  assert.match(await page.getByTestId("compaction-estimate").textContent(), /window/);
  await page.locator('[data-tab="Providers"]').click();
  assert.ok((await page.locator("table[data-chain]").count()) >= 5);
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
  await failed.close();
});
