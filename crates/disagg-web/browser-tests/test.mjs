// The page in headless Chromium, driven from the keyboard alone, at 1280 px and 390 px, plus the
// API's speed from a client and its numbers against the CLI's. Run with run.sh (it builds first).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repo, startServer, stopServer, launch, ready } from './lib.mjs';

let server;
let browser;

before(async () => {
  server = await startServer();
  console.log(`server: ${server.command} at ${server.url}`);
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  stopServer(server);
});

// A page that records console errors and uncaught exceptions.
async function open(width, query = '') {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width, height: 900 });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  const t0 = Date.now();
  await page.goto(server.url + query);
  await ready(page);
  const loadMs = Date.now() - t0;
  return { page, errors, loadMs };
}

// Presses Tab until the element with id `id` has the focus.
async function tabTo(page, id, max = 160) {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate(() => document.activeElement && document.activeElement.id) === id) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`#${id} is not reachable with Tab`);
}

// With a <select> focused, moves to `value` with the arrow keys.
async function arrowSelect(page, id, value) {
  const { from, to } = await page.evaluate(([id, value]) => {
    const el = document.getElementById(id);
    const opts = [...el.options].map((o) => o.value);
    return { from: el.selectedIndex, to: opts.indexOf(value) };
  }, [id, value]);
  assert.ok(to >= 0, `${id} has no option ${value}`);
  const key = to > from ? 'ArrowDown' : 'ArrowUp';
  for (let i = 0; i < Math.abs(to - from); i++) await page.keyboard.press(key);
  assert.equal(await page.$eval(`#${id}`, (el) => el.value), value);
}

const text = (page, sel) => page.$eval(sel, (el) => el.textContent.trim());
async function waitText(page, sel, want) {
  try {
    await page.waitForFunction(([sel, want]) => {
      const el = document.querySelector(sel);
      return el && el.textContent.trim() === want;
    }, [sel, want], { timeout: 10000 });
  } catch (e) {
    throw new Error(`${sel}: wanted "${want}", shows "${await text(page, sel)}"`);
  }
}

// The focused element (or, for the visually hidden radio buttons, its label) draws a focus ring.
async function focusVisible(page) {
  return page.evaluate(() => {
    let el = document.activeElement;
    if (el.type === 'radio' && el.labels && el.labels[0]) el = el.labels[0];
    const s = getComputedStyle(el);
    return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2;
  });
}

const stats = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const q = (p) => v[Math.min(v.length - 1, Math.floor(p * (v.length - 1) + 0.5))];
  return { n: v.length, p50: q(0.5), p95: q(0.95), max: v[v.length - 1] };
};
const f1 = (x) => x.toFixed(1);

for (const width of [1280, 390]) {
  test(`keyboard only at ${width} px: the chapter's numbers, no console errors`, async () => {
    const { page, errors, loadMs } = await open(width);
    const nav = await page.evaluate(() => {
      const n = performance.getEntriesByType('navigation')[0];
      return { dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd, ready: window.__disagg.readyAt };
    });
    console.log(`[${width}px] page load ${f1(nav.load)} ms (DOMContentLoaded ${f1(nav.dcl)} ms); first results `
      + `of both configurations at ${f1(nav.ready)} ms; goto->ready ${loadMs} ms`);
    assert.ok(nav.load < 1000, `the page loads in under 1 s (${nav.load} ms)`);
    assert.ok(nav.ready < 1000, `first results in under 1 s (${nav.ready} ms)`);

    // Every form control has a label.
    const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, button')]
      .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
        && !el.getAttribute('aria-labelledby') && !(el.tagName === 'BUTTON' && el.textContent.trim()))
      .map((el) => el.id || el.outerHTML.slice(0, 60)));
    assert.deepEqual(unlabelled, []);
    // Nothing wider than the screen.
    const sw = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(sw <= width, `no horizontal scrolling (${sw} > ${width})`);

    // The calculator: 2,048 tokens on 25 GbE, 85.9 ms exposed.
    await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
    await page.evaluate(() => document.activeElement && document.activeElement.blur());
    await tabTo(page, 'calc-tokens');
    assert.ok(await focusVisible(page), 'visible focus on the tokens field');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('4096');
    await waitText(page, '#t-kv', '536.9 MB');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('2048');
    await waitText(page, '#t-kv', '268.4 MB');
    await tabTo(page, 'calc-link');
    assert.ok(await focusVisible(page), 'visible focus on the link');
    await arrowSelect(page, 'calc-link', 'eth-100g');
    await waitText(page, '#t-exposed', '21.5 ms');
    await arrowSelect(page, 'calc-link', 'eth-25g');
    await waitText(page, '#t-exposed', '85.9 ms');
    await waitText(page, '#t-transfer', '85.9 ms');
    await waitText(page, '#t-prefill', '59.0 ms');
    await waitText(page, '#t-full', '11.6 req/s');
    // Layer by layer: 28.7 ms.
    await tabTo(page, 'calc-send-whole');
    assert.ok(await focusVisible(page), 'visible focus on the send switch');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.$eval('#calc-send-layerwise', (el) => el.checked), true);
    await waitText(page, '#t-exposed', '28.7 ms');
    // FP8 in the link as well: 1.363 ms, shown as 1.4 ms.
    await tabTo(page, 'calc-compression');
    await arrowSelect(page, 'calc-compression', 'fp8');
    await waitText(page, '#t-exposed', '1.4 ms');
    await waitText(page, '#t-wire', '134.2 MB');
    // The timeline shows one slice per layer.
    const slices = await page.$$eval('#calc-chart rect.bar-transfer', (r) => r.length);
    assert.equal(slices, 32);

    // The simulator: the §15 preset, chosen and run from the keyboard.
    await tabTo(page, 'a-preset');
    assert.ok(await focusVisible(page), 'visible focus on the preset');
    await arrowSelect(page, 'a-preset', 'eth25g-14rps');
    await tabTo(page, 'a-run');
    await page.keyboard.press('Enter');
    await waitText(page, '#r-a-handoff_p99', '9,657.8 ms');
    await waitText(page, '#r-a-slo_attainment', '41.0%');
    await waitText(page, '#r-a-link_busy', '94.0%');
    await waitText(page, '#r-a-tpot_p99', '77.2 ms');
    // Change a number from the keyboard: the rate, then back.
    await tabTo(page, 'a-rate');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('8');
    await page.keyboard.press('Enter');
    await waitText(page, '#r-a-tpot_p99', '11.6 ms');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('14');
    await page.keyboard.press('Enter');
    await waitText(page, '#r-a-handoff_p99', '9,657.8 ms');
    // Charts drew: CDF lines for both configurations, the utilisation and the sweep.
    await page.waitForFunction(() => document.querySelectorAll('#ch-sweep path.ln').length === 2, null, { timeout: 10000 });
    for (const id of ['#ch-ttft', '#ch-tpot', '#ch-handoff', '#ch-util-a', '#ch-util-b']) {
      assert.ok(await page.$$eval(`${id} path.ln`, (p) => p.length) >= 1, `${id} has lines`);
    }

    // Configuration B off and on again, with the space bar.
    await tabTo(page, 'b-on');
    await page.keyboard.press('Space');
    await page.waitForFunction(() => document.body.classList.contains('single'));
    assert.equal(await page.$eval('#r-b-slo_attainment', (el) => el.offsetParent), null, 'B hidden');
    await page.waitForTimeout(100);
    assert.match(page.url(), /b=off/);
    await page.keyboard.press('Space');
    await page.waitForFunction(() => !document.body.classList.contains('single'));
    await page.waitForFunction(() => /%$/.test(document.getElementById('r-b-slo_attainment').textContent.trim()));
    // The sweep's metric, from the keyboard.
    await tabTo(page, 'sweep-metric');
    await arrowSelect(page, 'sweep-metric', 'slo_attainment');
    await page.waitForFunction(() => /SLOs met/.test(document.querySelector('#ch-sweep svg').textContent));

    // The state is in the URL: a new page from it shows the same view.
    await page.waitForTimeout(150);
    const url = page.url();
    assert.match(url, /a=eth25g-14rps/);
    assert.match(url, /send=layerwise/);
    assert.match(url, /comp=fp8/);
    assert.match(url, /sweep=slo_attainment/);
    const again = await browser.context.newPage();
    await again.setViewportSize({ width, height: 900 });
    await again.goto(url);
    await ready(again);
    await waitText(again, '#t-exposed', '1.4 ms');
    assert.equal(await again.$eval('#a-preset', (el) => el.value), 'eth25g-14rps');
    await waitText(again, '#r-a-handoff_p99', '9,657.8 ms');
    await again.close();

    // Dragging the slider (an input event per frame) redraws in the same task as the event.
    await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
    await page.evaluate(async () => {
      const range = document.getElementById('calc-tokens-range');
      for (let v = 512; v <= 16384; v += 512) {
        range.value = String(v);
        range.dispatchEvent(new Event('input'));
        await new Promise((res) => requestAnimationFrame(res));
      }
    });
    await waitText(page, '#t-kv', '2.1 GB');

    const p = await page.evaluate(() => window.__disagg);
    const hits = stats(p.calcDraws.filter((_, i) => p.calcHits[i]));
    const misses = stats(p.calcDraws.filter((_, i) => !p.calcHits[i]));
    const runs = stats(p.runs.filter((r) => r.requests === 800).map((r) => r.rtt));
    console.log(`[${width}px] calculator input -> redrawn: ${hits.n} from the prefetched answers (p50 ${f1(hits.p50)} ms, `
      + `max ${f1(hits.max)} ms), ${misses.n} through the server (p50 ${f1(misses.p50)} ms, max ${f1(misses.max)} ms); `
      + `800-request run round trip in the page: p50 ${f1(runs.p50)} ms, max ${f1(runs.max)} ms (${runs.n} runs)`);
    assert.ok(hits.n >= 32, 'the slider drag was drawn from prefetched answers');
    assert.ok(hits.p50 < 16.7, `a prefetched change redraws within one frame (p50 ${hits.p50} ms)`);
    assert.deepEqual(errors, []);
    assert.deepEqual(p.errors, []);
    await page.close();
  });
}

test('an engine without an option: the page hides its control after a 400 "unknown field"', async () => {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  // An older engine: the catalogue may announce `link_sharing` (added here if the engine lacks it),
  // but /api/run answers 400 "unknown field" whenever a body has it.
  await page.route('**/api/catalogue', async (route) => {
    const res = await route.fetch();
    const v = await res.json();
    if (!('link_sharing' in v.scenario_defaults)) v.scenario_defaults.link_sharing = 'fifo';
    await route.fulfill({ response: res, json: v });
  });
  let rejected = 0;
  await page.route('**/api/run', async (route) => {
    const body = JSON.parse(route.request().postData() || '{}');
    if ('link_sharing' in body) {
      rejected++;
      await route.fulfill({
        status: 400,
        contentType: 'application/json',
        body: JSON.stringify({ error: 'unknown field `link_sharing`, expected one of `model`, `device`', field: 'link_sharing' }),
      });
      return;
    }
    await route.continue();
  });
  await page.goto(server.url);
  await page.waitForFunction(() => window.__disagg && window.__disagg.ready, null, { timeout: 15000 });
  await page.waitForFunction(() => {
    const el = document.getElementById('a-link_sharing');
    return el.disabled && el.closest('.field').hidden;
  }, null, { timeout: 10000 });
  await waitText(page, '#a-link_sharing-note', 'not in this engine yet');
  await page.waitForFunction(() => document.getElementById('r-a-slo_attainment').textContent.trim().endsWith('%'), null, { timeout: 10000 });
  await page.waitForFunction(() => document.getElementById('r-b-slo_attainment').textContent.trim().endsWith('%'), null, { timeout: 10000 });
  assert.ok(rejected >= 1, 'the "server" said 400');
  assert.equal(await page.$eval('#a-error', (el) => el.hidden), true, 'no error left on the page');
  // The other options still work.
  assert.equal(await page.$eval('#a-link', (el) => el.disabled), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test('an invalid input shows its error next to it and no stale numbers', async () => {
  const { page } = await open(1280);
  await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
  const number = /\d/;
  assert.match(await text(page, '#t-kv'), number);
  const tiles = ['#t-kv', '#t-wire', '#t-transfer', '#t-prefill', '#t-exposed', '#t-full'];
  const noNumbers = async () => {
    for (const t of tiles) assert.equal(await text(page, t), '–', `${t} still shows a number`);
  };
  // Not a number at all: the page's own message, next to the input.
  await page.fill('#calc-tokens', '');
  await page.waitForFunction(() => {
    const e = document.getElementById('calc-tokens-err');
    return e && !e.hidden && /Prompt tokens/.test(e.textContent);
  });
  assert.equal(await page.$eval('#calc-tokens', (el) => el.getAttribute('aria-invalid')), 'true');
  assert.match(await page.$eval('#calc-tokens', (el) => el.getAttribute('aria-describedby') || ''), /calc-tokens-err/);
  await noNumbers();
  // A number the server refuses: its friendly message, next to the input; still no numbers.
  await page.fill('#calc-tokens', '1.5');
  await page.waitForFunction(() => /expected a whole number, got 1\.5/.test(document.getElementById('calc-tokens-err')?.textContent || ''));
  const msg = await text(page, '#calc-tokens-err');
  assert.equal(msg, "field 'prompt_tokens': expected a whole number, got 1.5");
  assert.doesNotMatch(msg, /invalid type|floating point|u64/);
  await noNumbers();
  // Fixed: numbers back, error gone.
  await page.fill('#calc-tokens', '4096');
  await waitText(page, '#t-kv', '536.9 MB');
  assert.equal(await page.$eval('#calc-tokens-err', (el) => el.hidden), true);
  assert.equal(await page.$eval('#calc-tokens', (el) => el.hasAttribute('aria-invalid')), false);

  // The simulator: an empty rate, then a refused one; the results column shows no numbers.
  await page.waitForFunction(() => /%$/.test(document.getElementById('r-a-slo_attainment').textContent.trim()));
  await page.fill('#a-rate', '');
  await page.waitForFunction(() => !document.getElementById('a-rate-err')?.hidden);
  assert.doesNotMatch(await text(page, '#r-a-slo_attainment'), number);
  assert.doesNotMatch(await text(page, '#r-a-ttft_p50'), number);
  await page.fill('#a-rate', '-1');
  await page.waitForFunction(() => /rate/.test(document.getElementById('a-rate-err')?.textContent || '')
    && !document.getElementById('a-rate-err').hidden, null, { timeout: 10000 });
  assert.doesNotMatch(await text(page, '#r-a-ttft_p50'), number);
  await page.fill('#a-rate', '4');
  await page.waitForFunction(() => /%$/.test(document.getElementById('r-a-slo_attainment').textContent.trim()), null, { timeout: 10000 });
  assert.equal(await page.$eval('#a-rate-err', (el) => el.hidden), true);
  await page.close();
});

test('the scheduling group: a lever preset fills its fields, a refused combination shows its error', async () => {
  const { page, errors } = await open(1280);
  await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
  const group = await page.$eval('#cfg-a [role="group"][aria-label="Scheduling and KV memory"]',
    (g) => [...g.querySelectorAll('[data-k]')].map((el) => el.dataset.k));
  assert.deepEqual(group, ['fast', 'batch_policy', 'max_num_batched_tokens', 'kv_policy', 'kv_block_size', 'max_seq_len',
    'max_decode_batch', 'preemption', 'swap_in', 'host_link', 'prefix_caching', 'prefix_eviction', 'speculative', 'gamma',
    'alpha', 'spec_seed', 'prefix_handoff', 'decode_router']);
  // The reference's defaults before any lever is chosen.
  const val = (k) => page.$eval(`#a-${k}`, (el) => el.value);
  assert.equal(await val('fast'), 'true');
  assert.equal(await val('batch_policy'), 'prefill-priority');
  assert.equal(await val('max_num_batched_tokens'), '');
  assert.equal(await val('kv_policy'), 'oracle');
  assert.equal(await val('host_link'), 'pcie5');
  assert.equal(await val('prefix_caching'), 'false');
  // Left out of the presets' JSON at its default: the select shows the default.
  assert.equal(await val('prefix_eviction'), 'lru');
  assert.equal(await val('speculative'), '');
  // A §20 preset fills the group.
  await page.selectOption('#a-preset', 'kv-paged-swap');
  await page.waitForFunction(() => document.getElementById('a-kv_policy').value === 'paged');
  assert.equal(await val('preemption'), 'swap');
  assert.equal(await val('host_link'), 'pcie4');
  assert.equal(await val('max_num_batched_tokens'), '8192');
  assert.equal(await val('kv_block_size'), '16');
  // Prefix caching with swap preemption is refused: the server's message next to the control.
  await page.selectOption('#a-prefix_caching', 'true');
  await page.waitForFunction(() => /swap preemption is not modelled/.test(document.getElementById('a-prefix_caching-err')?.textContent || '')
    && !document.getElementById('a-prefix_caching-err').hidden, null, { timeout: 10000 });
  // Back to recompute: the error goes.
  await page.selectOption('#a-prefix_caching', 'false');
  await page.waitForFunction(() => document.getElementById('a-prefix_caching-err')?.hidden !== false, null, { timeout: 10000 });
  // An empty token budget is unset, not an error.
  await page.fill('#a-max_num_batched_tokens', '');
  await page.waitForFunction(() => !document.getElementById('a-max_num_batched_tokens-err') || document.getElementById('a-max_num_batched_tokens-err').hidden);
  // No script errors (the refused run's 422 is the browser's own console line).
  assert.deepEqual(errors.filter((e) => !/status of 422/.test(e)), []);
  await page.close();
});

test('the later levers: prefix-aware hand-off and swap-in from the URL and the form, refusals on the field', async () => {
  // A: prefix caching with the prefix-aware hand-off over chat sessions, from the URL.
  const q = '?a.fast=false&a.requests=200&a.workload=chat&a.prefix_caching=true&a.prefix_handoff=true&b=off';
  const { page, errors } = await open(1280, q);
  await page.waitForFunction(() => document.getElementById('s-a-handoff_hit'), null, { timeout: 20000 });
  const val = (k) => page.$eval(`#a-${k}`, (el) => el.value);
  assert.equal(await val('prefix_handoff'), 'true');
  assert.equal(await val('decode_router'), 'least-loaded');
  assert.equal(await val('swap_in'), 'own-blocks');
  assert.equal(await val('max_decode_batch'), '256');
  assert.equal(await val('prompt_max'), '32768');
  // The field's help is the option's --help line.
  assert.match(await page.$eval('#a-swap_in', (el) => el.closest('.field').title), /next-step: no swap thrash\) \[own-blocks\]$/);
  // The block's figures are the API's for the same scenario.
  const post = async (extra) => {
    const r = await fetch(server.url + 'api/run', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ preset: 'link-ib-ndr', fast: false, requests: 200, workload: 'chat', prefix_caching: true, prefix_handoff: true, ...extra }),
    });
    assert.equal(r.status, 200);
    return (await r.json()).summary.scheduler;
  };
  const h = (await post({})).prefix_handoff;
  assert.ok(h.hit_tokens > 0, 'chat sessions hit');
  const n = (x) => x.toLocaleString('en-US');
  assert.equal(await text(page, '#s-a-handoff_hit'),
    `${(h.hit_rate * 100).toFixed(1)}% (${n(h.hit_tokens)} of ${n(h.prompt_tokens)} tokens, ${n(h.handoffs_hit)} of ${n(h.handoffs)} hand-offs)`);
  assert.equal(await text(page, '#s-a-decode_router'), 'least-loaded');
  // The prefix router, through the form.
  await page.selectOption('#a-decode_router', 'prefix');
  await waitText(page, '#s-a-decode_router', 'prefix');
  const hp = (await post({ decode_router: 'prefix' })).prefix_handoff;
  await waitText(page, '#s-a-handoff_hit',
    `${(hp.hit_rate * 100).toFixed(1)}% (${n(hp.hit_tokens)} of ${n(hp.prompt_tokens)} tokens, ${n(hp.handoffs_hit)} of ${n(hp.handoffs)} hand-offs)`);
  // The prefix router without the prefix-aware hand-off is refused: the message on the router's field.
  await page.selectOption('#a-prefix_handoff', 'false');
  await page.waitForFunction(() => /needs prefix_handoff/.test(document.getElementById('a-decode_router-err')?.textContent || '')
    && !document.getElementById('a-decode_router-err').hidden, null, { timeout: 10000 });
  assert.equal(await page.$('#s-a-handoff_hit'), null);
  // Back to the least-loaded router: the error goes, the plain prefix cache remains.
  await page.selectOption('#a-decode_router', 'least-loaded');
  await page.waitForFunction(() => document.getElementById('a-decode_router-err')?.hidden !== false
    && document.getElementById('s-a-hit_rate'), null, { timeout: 20000 });
  assert.equal(await page.$('#s-a-decode_router'), null);
  // Swap preemption with next-step swap-in, through the form: the swap rows show.
  await page.selectOption('#a-prefix_caching', 'false');
  await page.selectOption('#a-kv_policy', 'paged');
  await page.selectOption('#a-preemption', 'swap');
  await page.selectOption('#a-swap_in', 'next-step');
  // The URL follows the form after its debounce: wait for it, then for the run with the swap rows.
  await page.waitForFunction(() => /a\.swap_in=next-step/.test(location.search), null, { timeout: 20000 });
  await page.waitForFunction(() => document.getElementById('s-a-swap') && !document.getElementById('a-swap_in-err')?.textContent,
    null, { timeout: 20000 });
  assert.match(await page.evaluate(() => location.search), /a\.swap_in=next-step/);
  // A refused length bound: the message on its field.
  await page.fill('#a-prompt_min', '40000');
  await page.waitForFunction(() => /prompt_min/.test(document.getElementById('a-prompt_min-err')?.textContent || '')
    && !document.getElementById('a-prompt_min-err').hidden, null, { timeout: 10000 });
  assert.deepEqual(errors.filter((e) => !/status of 422/.test(e)), []);
  await page.close();
});

test('a scheduled run shows the scheduler block; a plain one does not', async () => {
  // A: the chapter's base with chunked prefill (the fast decode path is plain-only); B: plain.
  const { page, errors } = await open(1280, '?a.batch_policy=chunked&a.fast=false');
  await page.waitForFunction(() => !document.getElementById('sched-card').hidden
    && document.getElementById('s-a-batch'), null, { timeout: 15000 });
  const r = await fetch(server.url + 'api/run', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ preset: 'link-ib-ndr', batch_policy: 'chunked', fast: false }),
  });
  assert.equal(r.status, 200);
  const b = (await r.json()).summary.scheduler;
  assert.equal(b.batch_policy, 'chunked');
  const n = (x) => x.toLocaleString('en-US');
  assert.equal(await text(page, '#s-a-batch'), `chunked, budget ${n(b.token_budget)} tokens`);
  assert.equal(await text(page, '#s-a-kv'),
    `${b.kv_policy}, ${n(b.kv_capacity_units)} units × ${n(b.kv_unit_tokens)} tokens`);
  assert.ok(b.mean_running > 0 && b.mean_running < 1000);
  assert.equal(await text(page, '#s-a-mean_running'), b.mean_running.toFixed(1));
  assert.equal(await text(page, '#s-a-computed'), n(b.computed_prefill_tokens));
  // B runs without the levers: its column is empty.
  assert.equal(await text(page, '#s-b-batch'), '–');
  assert.equal(await text(page, '#s-b-mean_running'), '–');
  // Oracle KV, no prefix cache, no drafts: those rows are left out.
  for (const key of ['preemptions', 'swap', 'hit_rate', 'tokens_per_verify']) {
    assert.equal(await page.$(`#s-a-${key}`), null, key);
  }
  const heads = await page.$$eval('#sched-body th', (ths) => ths.map((t) => t.textContent));
  assert.deepEqual(heads, ['Batch policy', 'KV policy, capacity', 'Mean running', 'KV holding share',
    'Prefill tokens computed', 'Scheduling delay p50', 'Normalised latency']);
  // Switching A back to the plain engine hides the block.
  await page.goto(server.url);
  await ready(page);
  assert.equal(await page.$eval('#sched-card', (el) => el.hidden), true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the parallelism and formats group: fields from the URL, the blocks in the results', async () => {
  // A: the base (Llama-3-8B on H100s) with TP 2 on 2 GPUs and FP8 weights and KV cache (the fast
  // decode path is plain-only); B: plain.
  const { page, errors } = await open(1280,
    '?a.fast=false&a.tp=2&a.devices_per_instance=2&a.weight_format=fp8&a.kv_format=fp8');
  await page.waitForFunction(() => !document.getElementById('levers-card').hidden
    && document.getElementById('p-a-prefill'), null, { timeout: 15000 });
  assert.equal(await page.$eval('#a-tp', (el) => el.value), '2');
  assert.equal(await page.$eval('#a-pp', (el) => el.value), '');
  assert.equal(await page.$eval('#a-weight_format', (el) => el.value), 'fp8');
  assert.equal(await page.$eval('#a-compute_format', (el) => el.value), 'bf16');
  const opts = await page.$$eval('#a-kv_format option', (os) => os.map((o) => o.value));
  assert.deepEqual(opts, ['bf16', 'fp8', 'int8', 'int4', 'fp4']);
  const r = await fetch(server.url + 'api/run', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ preset: 'link-ib-ndr', fast: false, tp: 2, devices_per_instance: 2, weight_format: 'fp8', kv_format: 'fp8' }),
  });
  assert.equal(r.status, 200);
  const s = (await r.json()).summary;
  for (const role of ['prefill', 'decode']) {
    const b = s.parallel.find((x) => x.role === role);
    assert.equal(b.tp, 2);
    assert.ok(b.comm_frac > 0 && b.comm_frac < 1);
    assert.equal(await text(page, `#p-a-${role}`),
      `tp 2 × pp 1 × ep 1 · ${(100 * b.comm_frac).toFixed(1)}% of busy time on NVLink 4`);
    // B sets no layout: its cell is empty.
    assert.equal(await text(page, `#p-b-${role}`), '–');
  }
  // FP8 weights and KV: one byte a value each.
  assert.equal(await text(page, '#p-a-formats'),
    'weights fp8, KV fp8, compute bf16 · 1.000 / 1.000 bytes a weight / KV value');
  assert.equal(await page.$('#p-a-colocated'), null);
  const heads = await page.$$eval('#levers-body th', (ths) => ths.map((t) => t.textContent));
  assert.deepEqual(heads, ['Prefill layout', 'Decode layout', 'Formats']);
  // TP 4 on 2 GPUs per instance is refused with the devices it needs; 4 GPUs run it.
  await page.fill('#a-tp', '4');
  await page.waitForFunction(() => /needs 4 devices per instance \(got 2\)/.test(document.getElementById('a-error').textContent)
    && !document.getElementById('a-error').hidden, null, { timeout: 10000 });
  await page.fill('#a-devices_per_instance', '4');
  await page.waitForFunction(() => /^tp 4 × pp 1 × ep 1 · /.test(document.getElementById('p-a-prefill')?.textContent || '')
    && document.getElementById('a-error').hidden, null, { timeout: 15000 });
  await page.waitForTimeout(150);
  assert.match(page.url(), /a\.tp=4/);
  assert.match(page.url(), /a\.devices_per_instance=4/);
  // A page without the levers hides the card.
  await page.goto(server.url);
  await ready(page);
  assert.equal(await page.$eval('#levers-card', (el) => el.hidden), true);
  // With the preset's fast decode path on, a layout is refused next to the fast field, which
  // turns it off from the form.
  await page.goto(`${server.url}?a.tp=2&a.devices_per_instance=2`);
  await ready(page);
  assert.equal(await page.$eval('#a-fast', (el) => el.value), 'true');
  await page.waitForFunction(() => /fast_forward/.test(document.getElementById('a-fast-err')?.textContent || ''),
    null, { timeout: 10000 });
  await page.selectOption('#a-fast', 'false');
  await page.waitForFunction(() => /^tp 2 × pp 1 × ep 1 · /.test(document.getElementById('p-a-prefill')?.textContent || '')
    && !document.getElementById('levers-card').hidden, null, { timeout: 15000 });
  assert.deepEqual(errors.filter((e) => !/status of 422/.test(e)), []);
  await page.close();
});

test('the models and engines group: fields from the URL, the optical and ppa blocks in the results', async () => {
  // A: Hyena (circular FFT mixing) with optical-fft prefill on 1 device an instance and --ppa;
  // B: plain.
  const q = 'a.fast=false&a.requests=50&a.model=llama3-8b-hyena-circ&a.prefill_device=optical-fft&a.devices_per_instance=1&a.ppa=true';
  const { page, errors } = await open(1280, `?${q}`);
  await page.waitForFunction(() => !document.getElementById('engines-card').hidden
    && document.getElementById('e-a-opt-prefill-0') && document.getElementById('e-a-ppa-w'), null, { timeout: 20000 });
  assert.equal(await page.$eval('#a-ppa', (el) => el.value), 'true');
  assert.equal(await page.$eval('#a-ft_overlap', (el) => el.value), 'false');
  for (const k of ['fft_efficiency', 'ft_enob', 'ft_mask_rate', 'ced_replay_on']) {
    assert.equal(await page.$eval(`#a-${k}`, (el) => el.value), '', k);
  }
  const opts = await page.$$eval('#a-ced_replay_on option', (os) => os.map((o) => o.value));
  assert.deepEqual(opts, ['', 'prefill', 'decode']);
  const r = await fetch(server.url + 'api/run', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ preset: 'link-ib-ndr', fast: false, requests: 50, model: 'llama3-8b-hyena-circ', prefill_device: 'optical-fft', devices_per_instance: 1, ppa: true }),
  });
  assert.equal(r.status, 200);
  const s = (await r.json()).summary;
  const o = s.optical.find((x) => x.name === 'prefill-0');
  assert.ok(o.optical_flops > 0);
  assert.equal(await text(page, '#e-a-opt-prefill-0'),
    `${(100 * o.optical_bound_frac).toFixed(1)}% of busy time optical-bound · ${o.optical_flops.toExponential(3)} FLOPs · `
    + `conversions ${o.conversion_j.toFixed(1)} J, static ${o.static_j.toFixed(1)} J`);
  // B has no engine and no --ppa: its cells are empty.
  assert.equal(await text(page, '#e-b-opt-prefill-0'), '–');
  assert.equal(await text(page, '#e-b-ppa-w'), '–');
  const heads = await page.$$eval('#engines-body th', (ths) => ths.map((t) => t.textContent));
  assert.deepEqual(heads, s.optical.map((x) => `Optical engine, ${x.name}`)
    .concat(['Silicon area', 'Silicon cost', 'Output tokens per J', 'Output tok/s per mm²', 'Output tok/s per $1k']));
  const p = s.ppa;
  assert.equal((await text(page, '#e-a-ppa-mm2')).replace(/,/g, ''), `${p.total_mm2.toFixed(0)} mm²`);
  assert.equal((await text(page, '#e-a-ppa-usd')).replace(/,/g, ''), `$${p.total_usd.toFixed(0)}`);
  assert.equal(await text(page, '#e-a-ppa-w'), `${p.perf_per_W.toFixed(3)} tok/J`);
  assert.equal(await text(page, '#e-a-ppa-mm2-perf'), p.perf_per_mm2.toFixed(4));
  assert.equal(await text(page, '#e-a-ppa-kusd'), p.perf_per_kusd.toFixed(3));
  // A set field goes into the URL; --ppa off takes the ppa rows away and keeps the optical ones.
  await page.fill('#a-ft_enob', '6');
  await page.waitForTimeout(150);
  await page.selectOption('#a-ppa', 'false');
  await page.waitForFunction(() => !document.getElementById('e-a-ppa-w')
    && document.getElementById('e-a-opt-prefill-0'), null, { timeout: 20000 });
  await page.waitForTimeout(150);
  assert.match(page.url(), /a\.ft_enob=6/);
  assert.doesNotMatch(page.url(), /a\.ppa=/);
  // A page without an engine device or --ppa hides the card.
  await page.goto(server.url);
  await ready(page);
  assert.equal(await page.$eval('#engines-card', (el) => el.hidden), true);
  assert.deepEqual(errors, []);
  await page.close();
});

test('the served models (issue 16): grouped in the picker, why their KV differs, hand-offs by layer kind', async () => {
  const { page, errors } = await open(1280);
  // The other models as before, then one group of the 15 served today.
  const groups = await page.$$eval('#calc-model optgroup', (gs) => gs.map((g) => [g.label, g.querySelectorAll('option').length]));
  assert.deepEqual(groups, [['Served today (issue 16)', 15]]);
  assert.equal(await page.$eval('#calc-model', (el) => el.options[0].value), 'llama3-8b');
  assert.equal(await page.$eval('#a-model optgroup', (g) => g.label), 'Served today (issue 16)');
  // Llama-3-8B has no layer kinds: no line.
  assert.equal(await page.$eval('#calc-model-why', (el) => el.hidden), true);
  // DeepSeek-V3, from the keyboard: 2,048 tokens x 61 MLA layers x 576 values x 2 B = 143,917,056 B.
  await page.focus('#calc-model');
  await arrowSelect(page, 'calc-model', 'deepseek-v3');
  await waitText(page, '#t-kv', '143.9 MB');
  const why = await text(page, '#calc-model-why');
  assert.ok(why.startsWith('MLA: every layer caches one 576-value latent per token'), why);
  // 61 x 576 x 2 = 70,272 B a token.
  assert.ok(why.endsWith(' · 70.3 kB/token (61 MLA layers)'), why);
  assert.equal(await page.$eval('#calc-model-why', (el) => el.hidden), false);
  assert.match(await page.$eval('#calc-model', (el) => el.getAttribute('aria-describedby')), /calc-model-why/);
  // gpt-oss-120b: 18 full and 18 sliding layers of 2,048 B a token; the sliding ones keep 128 tokens
  // (4,718,592 B): 2,048 x 36,864 + 4,718,592 = 80,216,064 B.
  await page.selectOption('#calc-model', 'gpt-oss-120b');
  await waitText(page, '#t-kv', '80.2 MB');
  assert.ok((await text(page, '#calc-model-why')).endsWith(' · 36.9 kB/token (18 full-attention layers) + 36.9 kB/token for '
    + 'the last 128 tokens only (18 sliding-window layers, at most 4.7 MB)'));
  // Qwen3-Next: 12 full layers of 2,048 B a token and a fixed 39,518,208 B linear state:
  // 2,048 x 24,576 + 39,518,208 = 89,849,856 B.
  await page.selectOption('#calc-model', 'qwen3-next-80b-a3b');
  await waitText(page, '#t-kv', '89.8 MB');
  assert.ok((await text(page, '#calc-model-why')).endsWith(' · 24.6 kB/token (12 full-attention layers) + a fixed 39.5 MB '
    + 'state a request (36 linear-attention layers)'));
  // Back to a model without layer kinds: the line goes.
  await page.selectOption('#calc-model', 'llama3-70b');
  await waitText(page, '#t-kv', '671.1 MB');
  assert.equal(await page.$eval('#calc-model-why', (el) => el.hidden), true);
  assert.deepEqual(errors, []);
  await page.close();
  // From the URL.
  const again = await open(1280, '?model=deepseek-v3');
  await waitText(again.page, '#t-kv', '143.9 MB');
  assert.ok((await text(again.page, '#calc-model-why')).endsWith('70.3 kB/token (61 MLA layers)'));
  assert.deepEqual(again.errors, []);
  await again.page.close();
});

test('a calculator change sends only a few /api/handoff requests', async () => {
  const { page } = await open(1280);
  let count = 0;
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/handoff') count++; });
  const settle = async () => {
    await page.waitForTimeout(50);
    await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
    await page.waitForTimeout(400); // anything scheduled late would show up here
  };
  await settle();
  const changes = [
    async () => page.selectOption('#calc-link', 'eth-100g'),
    async () => page.fill('#calc-tokens', '5000'),
    async () => page.selectOption('#calc-model', { index: 0 }),
    async () => page.check('#calc-send-layerwise'),
    async () => page.selectOption('#calc-compression', 'fp8'),
  ];
  const counts = [];
  for (const change of changes) {
    count = 0;
    await change();
    await settle();
    counts.push(count);
  }
  console.log(`[calc] /api/handoff requests per change: ${counts.join(', ')}`);
  for (const c of counts) assert.ok(c <= 3, `a change sent ${c} /api/handoff requests (${counts})`);
  assert.ok(await page.evaluate(() => window.__disagg.handoffBatches) >= 1, 'the prefetch is batched');
  assert.match(await text(page, '#t-exposed'), /\d/);
  await page.close();
});

test('rank by rank: each NIC of TP8 -> TP4 on the timeline, asked for only when open', async () => {
  const { page, errors } = await open(1280, '?model=llama3-70b&link=eth-100g&gpus=8');
  await waitText(page, '#t-kv', '671.1 MB');
  let count = 0;
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/handoff') count++; });
  await page.click('#ranks summary');
  await page.waitForFunction(() => document.querySelectorAll('#ranks-chart rect.bar-nic').length === 16, null, { timeout: 10000 });
  await page.selectOption('#ranks-decode-tp', '4');
  await page.waitForFunction(() => document.querySelectorAll('#ranks-chart rect.bar-nic').length === 12, null, { timeout: 10000 });
  // 8 heads of 83.9 MB, two to each decode NIC: 20 µs + 13.42 ms, against 53.7 ms as one transfer.
  assert.equal(await text(page, '#ranks-cap'),
    'TP8 (8 NICs) → TP4 (4 NICs): 8 flows, hand-off 13.4 ms against 53.7 ms as one transfer (4.00x)');
  assert.equal(await page.$$eval('#ranks-chart rect.bar-single', (r) => r.length), 1);
  // A refused combination shows its error and no stale bars.
  await page.selectOption('#calc-compression', 'fp8');
  await page.waitForFunction(() => !document.getElementById('ranks-error').hidden, null, { timeout: 10000 });
  assert.match(await text(page, '#ranks-error'), /^compression: 'fp8': the rank-aware hand-off models one uncompressed prompt/);
  assert.equal(await page.$$eval('#ranks-chart rect', (r) => r.length), 0);
  // Closed, a calculator change asks for the hand-off only.
  await page.click('#ranks summary');
  await page.selectOption('#calc-compression', 'none');
  await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
  await page.waitForTimeout(300);
  const before = count;
  await page.selectOption('#calc-link', 'ib-ndr');
  await page.waitForTimeout(300);
  assert.ok(count - before <= 3, `${count - before} requests`);
  // The refusal above is a 422 the browser logs; nothing else.
  assert.deepEqual(errors.filter((e) => !/status of 422/.test(e)), []);
  await page.close();
});

test("the calculator's KV format and draft: the bytes change, sent only when set, errors on the field", async () => {
  const { page, errors } = await open(1280, '?link=ib-ndr');
  await waitText(page, '#t-kv', '268.4 MB');
  const bodies = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname === '/api/handoff') bodies.push(JSON.parse(r.postData() || '{}'));
  });
  // The default request has none of the four keys.
  await page.selectOption('#calc-link', 'eth-100g');
  await page.waitForFunction(() => window.__disagg.prefetchIdle, null, { timeout: 15000 });
  for (const b of bodies) for (const k of ['kv_format', 'weight_format', 'compute_format', 'speculative']) {
    assert.ok(!(k in b), `${k} sent at its default`);
  }
  // FP8 KV: 2,048 x 65,536 B = 134.2 MB (levers-cost.md §6.2 item 4).
  await page.selectOption('#calc-kv-format', 'fp8');
  await waitText(page, '#t-kv', '134.2 MB');
  assert.match(await text(page, '#t-kv-s'), /in fp8/);
  await page.waitForFunction(() => /kvf=fp8/.test(location.search), null, { timeout: 5000 });
  // An MTP draft's KV too: 2,048 x (65,536 + 2,048) B = 138.4 MB.
  await page.selectOption('#calc-draft', 'mtp');
  await waitText(page, '#t-kv', '138.4 MB');
  assert.match(await text(page, '#t-kv-s'), /mtp draft's too/);
  // FP8 KV with compression: the run's refusal, next to the KV format.
  await page.selectOption('#calc-draft', '');
  await page.selectOption('#calc-compression', 'fp8');
  await page.waitForFunction(() => /KV hand-off compression assumes a BF16 KV cache/.test(document.getElementById('calc-kv-format-err')?.textContent || ''), null, { timeout: 10000 });
  assert.equal(await text(page, '#t-kv'), '–');
  await page.selectOption('#calc-compression', 'none');
  await waitText(page, '#t-kv', '134.2 MB');
  assert.deepEqual(errors.filter((e) => !/status of 422/.test(e)), []);
  await page.close();
  // From the URL: INT4 KV, 2,048 x 33,792 B = 69.2 MB.
  const again = await open(1280, '?kvf=int4');
  await waitText(again.page, '#t-kv', '69.2 MB');
  assert.equal(await again.page.$eval('#calc-kv-format', (el) => el.value), 'int4');
  await again.page.close();
});

test('the API from a client: 800-request runs round-trip in milliseconds', async () => {
  const body = JSON.stringify({ preset: 'link-ib-ndr' });
  const post = async (path, b) => {
    const t0 = performance.now();
    const r = await fetch(server.url.replace(/\/$/, '') + path, { method: 'POST', body: b, headers: { 'Content-Type': 'application/json' } });
    const v = await r.json();
    return { ms: performance.now() - t0, status: r.status, v, timing: r.headers.get('server-timing') };
  };
  for (let i = 0; i < 5; i++) await post('/api/run', body); // warm up
  const rtt = [];
  const sim = [];
  for (let i = 0; i < 40; i++) {
    const r = await post('/api/run', body);
    assert.equal(r.status, 200);
    assert.equal(r.v.summary.requests.completed, 800);
    rtt.push(r.ms);
    sim.push(Number(/sim;dur=([\d.]+)/.exec(r.timing)[1]));
  }
  const withCharts = [];
  for (let i = 0; i < 20; i++) {
    withCharts.push((await post('/api/run', JSON.stringify({ preset: 'eth25g-14rps', latency_samples: 400, series: true }))).ms);
  }
  const hand = [];
  for (let i = 0; i < 40; i++) hand.push((await post('/api/handoff', JSON.stringify({ prompt_tokens: 1000 + i }))).ms);
  const a = stats(rtt);
  const s = stats(sim);
  const c = stats(withCharts);
  const h = stats(hand);
  console.log(`[api] 800-request /api/run round trip: p50 ${f1(a.p50)} ms, p95 ${f1(a.p95)} ms (simulation p50 ${f1(s.p50)} ms); `
    + `with CDF samples and series: p50 ${f1(c.p50)} ms; /api/handoff: p50 ${f1(h.p50)} ms, p95 ${f1(h.p95)} ms`);
  assert.ok(a.p50 < 50, `an 800-request run round-trips in under 50 ms (p50 ${a.p50})`);
});

test("the API's hand-off numbers are the CLI's, key for key", { skip: !cliBinary() && 'no disagg binary built' }, async () => {
  const cases = [
    [{}, []],
    [{ send: 'layerwise' }, ['--send', 'layerwise']],
    [{ send: 'layerwise', compression: 'fp8' }, ['--send', 'layerwise', '--compression', 'fp8']],
    [{ model: 'llama3-70b', devices_per_instance: 4, link: 'ib-ndr', compression: 'fp4-block', compress_at: 'gpu', prompt_tokens: 8191 },
      ['--model', 'llama3-70b', '--devices-per-instance', '4', '--link', 'ib-ndr', '--compression', 'fp4-block', '--compress-at', 'gpu', '--prompt-tokens', '8191']],
    [{ all_links: true, send: 'layerwise', compression: 'kivi2' }, ['--all-links', '--send', 'layerwise', '--compression', 'kivi2']],
    [{ model: 'llama3-70b', devices_per_instance: 8, link: 'eth-100g', handoff_ranks: true, decode_tp: 16, prefill_pp: 2, kv_relayout_cost: 'hbm' },
      ['--model', 'llama3-70b', '--devices-per-instance', '8', '--link', 'eth-100g', '--handoff-ranks', '--decode-tp', '16', '--prefill-pp', '2', '--kv-relayout-cost', 'hbm']],
  ];
  for (const [body, args] of cases) {
    const r = await fetch(server.url + 'api/handoff', { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
    assert.equal(r.status, 200);
    const api = await r.json();
    const cli = JSON.parse(execFileSync(cliBinary(), ['handoff', ...args, '--json'], { encoding: 'utf8' }));
    assert.deepEqual(api, cli, `handoff ${args.join(' ')}`);
  }
});

function cliBinary() {
  const target = process.env.CARGO_TARGET_DIR || join(repo, 'target');
  const p = join(target, 'release', 'disagg');
  return existsSync(p) ? p : null;
}
