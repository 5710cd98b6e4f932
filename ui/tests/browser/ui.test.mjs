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
    const path = join(root, req.url === "/" ? "index.html" : req.url.split("?")[0]);
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

test("the cache panel forecasts each turn's breakpoints with costs, the ledger and advice", async () => {
  await page.locator('[data-tab="Cache"]').click();
  await page.getByTestId("cache-totals").waitFor();
  assert.match(await page.getByTestId("cache-model").textContent(), /claude-sonnet-4-5 \(anthropic, explicit breakpoints\)/);
  assert.equal(await page.getByTestId("cache-turn").count(), 2, "the played turn and the next one");
  assert.match(await page.getByTestId("cache-turns").textContent(), /under claude-sonnet-4-5's minimum cacheable 1024 tokens/);
  assert.match(await page.getByTestId("cache-totals").textContent(), /against \$.* without caching/);
  assert.match(await page.getByTestId("ledger").textContent(), /story-director/);
  assert.match(await page.getByTestId("advice").textContent(), /never reaches/);
  await page.screenshot({ path: join(shots, "browser-cache.png") });
});

test("the tests panel runs the folder's test sessions and lists every check", async () => {
  await page.locator('[data-tab="Tests"]').click();
  await page.getByTestId("tests-run").click();
  await page.getByTestId("tests-summary").waitFor();
  assert.match(await page.getByTestId("tests-summary").textContent(), /4 sessions, \d+ checks: all passed/);
  assert.equal(await page.getByTestId("test-session").count(), 4);
  assert.match(await page.getByTestId("test-session").nth(1).textContent(), /\[segment-placement\] segment story-director\/tone in stable-segments/);
  await page.screenshot({ path: join(shots, "browser-tests.png") });
});
