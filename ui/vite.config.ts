import { defineConfig } from "vite";
import { svelte } from "@sveltejs/vite-plugin-svelte";

// `--mode fake` builds the UI against the fake backend (fixtures from the Rust tests), for
// browser tests over plain HTTP; the default build talks to Tauri.
export default defineConfig(({ mode }) => ({
  plugins: [svelte()],
  define: { __FAKE_BACKEND__: JSON.stringify(mode === "fake") },
  build: { target: "es2022", sourcemap: false },
  test: { include: ["src/**/*.test.ts", "scripts/*.test.mjs"], environment: "node" },
}));
