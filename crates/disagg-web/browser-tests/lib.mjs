// Shared by the browser tests and the screenshot script: start the server, launch Debian's Chromium.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '../../..');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// The server: $DISAGG_SERVE if set (a command line), else `disagg serve` from the release build.
export function serverCommand() {
  if (process.env.DISAGG_SERVE) {
    const parts = process.env.DISAGG_SERVE.split(/\s+/).filter(Boolean);
    return { cmd: parts[0], args: parts.slice(1) };
  }
  const target = process.env.CARGO_TARGET_DIR || join(repo, 'target');
  return { cmd: join(target, 'release', 'disagg'), args: ['serve'] };
}

// Starts `... --host 127.0.0.1 --port 0` and resolves with {url, proc} once it prints its URL.
export function startServer() {
  const { cmd, args } = serverCommand();
  if (!existsSync(cmd)) throw new Error(`no server binary at ${cmd} (build it first)`);
  const proc = spawn(cmd, [...args, '--host', '127.0.0.1', '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  return new Promise((res, rej) => {
    let err = '';
    const timer = setTimeout(() => { proc.kill(); rej(new Error(`server did not start: ${err}`)); }, 15000);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /disagg serving on (http:\/\/\S+)/.exec(err);
      if (m) { clearTimeout(timer); res({ url: m[1], proc, command: [cmd, ...args].join(' ') }); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); rej(new Error(`server exited (${code}): ${err}`)); });
  });
}

export function stopServer(s) {
  if (s && s.proc && s.proc.exitCode === null) {
    s.proc.removeAllListeners('exit');
    s.proc.kill('SIGTERM');
  }
}

// Headless Chromium with a fresh profile; never downloads anything.
export async function launch() {
  const dir = mkdtempSync(join(tmpdir(), 'disagg-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    async close() { await context.close(); rmSync(dir, { recursive: true, force: true }); },
  };
}

// Waits until the page has its first results (window.__disagg.ready).
export async function ready(page) {
  await page.waitForFunction(() => window.__disagg && window.__disagg.ready, null, { timeout: 15000 });
}
