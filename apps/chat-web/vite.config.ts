// The page's build: `vite build` writes it to dist/page, static files any server can serve
// (server/mount-chat.ts serves them beside the chat routes).
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  plugins: [react()],
  // Relative asset paths: the page works wherever an app mounts it.
  base: "./",
  build: { outDir: "dist/page", emptyOutDir: true },
});
