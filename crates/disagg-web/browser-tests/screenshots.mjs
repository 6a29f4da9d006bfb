// Screenshots of the page for the docs: docs/screenshots/page-desktop.png (1280 px) and
// page-phone.png (390 px), of the chapter's §15 comparison (25 GbE at 14 req/s, without and with FP8).
// Usage: node screenshots.mjs [OUT_DIR]   (default: <repo>/docs/screenshots)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { repo, startServer, stopServer, launch, ready } from './lib.mjs';

const out = process.argv[2] || join(repo, 'docs', 'screenshots');
mkdirSync(out, { recursive: true });
const server = await startServer();
const browser = await launch();
try {
  const view = 'a=eth25g-14rps&b=eth25g-14rps-fp8&send=layerwise';
  for (const [name, width, height] of [['page-desktop.png', 1280, 900], ['page-phone.png', 390, 844]]) {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width, height });
    await page.goto(`${server.url}?${view}`);
    await ready(page);
    await page.waitForFunction(() => window.__disagg.sweeps.length >= 2, null, { timeout: 15000 });
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(out, name), fullPage: true });
    console.log(`wrote ${join(out, name)}`);
    await page.close();
  }
} finally {
  await browser.close();
  stopServer(server);
}
