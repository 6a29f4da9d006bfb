// disagg serve: the page. Vanilla JS, inline SVG, no dependencies. Every number comes from the
// server's exact engine (/api/handoff, /api/run, /api/sweep); this file only formats and draws.
'use strict';

(() => {
  // ---- small helpers ------------------------------------------------------------------------

  const $ = (sel, root = document) => root.querySelector(sel);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({
    '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
  }[c]));
  const clone = (o) => JSON.parse(JSON.stringify(o));
  const perf = window.__disagg = {
    ready: false, runs: [], calcDraws: [], calcHits: [], sweeps: [], errors: [], prefetchIdle: false,
    handoffBatches: 0,
  };

  async function api(path, body) {
    const init = body === undefined ? {} : {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    };
    let r;
    try {
      r = await fetch(path, init);
    } catch (e) {
      return { status: 0, body: { error: 'the server cannot be reached' }, timing: null };
    }
    let v;
    try { v = await r.json(); } catch (e) { v = { error: `unexpected answer (${r.status})` }; }
    return { status: r.status, body: v, timing: r.headers.get('Server-Timing') };
  }

  // An error about one input sits next to it: the input is marked invalid and described by the
  // message. An empty message clears it.
  function fieldError(el, msg) {
    const box = el.closest('.field') || el.parentElement;
    const id = `${el.id}-err`;
    let note = document.getElementById(id);
    if (!note && !msg) return;
    if (!note) {
      note = document.createElement('p');
      note.className = 'error field-error';
      note.id = id;
      note.setAttribute('aria-live', 'polite');
      box.appendChild(note);
    }
    note.textContent = msg || '';
    note.hidden = !msg;
    const ids = (el.getAttribute('aria-describedby') || '').split(/\s+/).filter((x) => x && x !== id);
    if (msg) {
      el.setAttribute('aria-invalid', 'true');
      ids.push(id);
    } else {
      el.removeAttribute('aria-invalid');
    }
    if (ids.length) el.setAttribute('aria-describedby', ids.join(' '));
    else el.removeAttribute('aria-describedby');
  }
  function clearFieldErrors(root) {
    for (const el of root.querySelectorAll('[aria-invalid="true"]')) fieldError(el, '');
  }

  // ---- number formats: the CLI's (crates/disagg-cli/src/format.rs) --------------------------

  // x.toFixed(d) with Rust's rounding of exact ties (half to even on the exact binary value).
  function toFixedRust(x, d) {
    const s = x.toFixed(d);
    if (Math.abs(x) >= 1e15) return s;
    const exact = x.toFixed(Math.min(100, d + 60));
    const rest = exact.slice(exact.indexOf('.') + 1 + d);
    if (!/^50*$/.test(rest)) return s;
    // A tie: toFixed rounded away from zero; keep it only if that made the last digit even.
    const last = s.replace(/[.-]/g, '');
    if (Number(last[last.length - 1]) % 2 === 0) return s;
    const down = exact.slice(0, exact.indexOf('.') + (d > 0 ? 1 + d : 0));
    return down;
  }
  function fixed(x, d) {
    if (x === null || x === undefined || Number.isNaN(x)) return 'n/a';
    if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
    const s = toFixedRust(Math.abs(x), d);
    const [i, f] = s.split('.');
    const int = i.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    const neg = x < 0 && /[1-9]/.test(s);
    return (neg ? '-' : '') + int + (f !== undefined ? '.' + f : '');
  }
  const thousands = (n) => fixed(n, 0);
  function bytes(b) {
    const u = b >= 1e12 ? [1e12, 'TB'] : b >= 1e9 ? [1e9, 'GB'] : b >= 1e6 ? [1e6, 'MB'] : b >= 1e3 ? [1e3, 'kB'] : null;
    return u ? `${fixed(b / u[0], 1)} ${u[1]}` : `${fixed(b, 0)} B`;
  }
  // The calculator's one decimal (the CLI's time_1dp): ms, or µs below 0.1 ms.
  const time1 = (s) => (s >= 1e-4 ? `${fixed(s * 1e3, 1)} ms` : `${fixed(s * 1e6, 1)} µs`);
  const rps = (r) => `${fixed(r, 1)} req/s`;
  const gbps = (bps) => `${bps / 1e9} GB/s`;
  // Latencies in the results: ms with one decimal, seconds from 10 s (the chapter's style).
  function lat(s) {
    if (s === null || s === undefined || !Number.isFinite(s)) return 'n/a';
    return s >= 10 ? `${fixed(s, 1)} s` : `${fixed(s * 1e3, 1)} ms`;
  }
  const pct = (x) => (x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : `${fixed(x * 100, 1)}%`);
  function tickFmt(v) {
    if (v === 0) return '0';
    const a = Math.abs(v);
    if (a >= 1000) return thousands(v);
    if (a >= 1) return String(+v.toPrecision(6));
    return String(+v.toPrecision(3));
  }

  // ---- state --------------------------------------------------------------------------------

  let cat = null;
  let presets = [];
  const CALC_DEFAULT = {
    model: 'llama3-8b', prompt_tokens: 2048, link: 'eth-25g', compression: 'none',
    compress_at: 'link', send: 'whole', prefill_device: 'h100', devices_per_instance: 1,
    kv_format: 'bf16', weight_format: 'bf16', compute_format: 'bf16', speculative: '',
  };
  const calc = { ...CALC_DEFAULT };
  const CALC_URL = {
    model: 'model', prompt_tokens: 'tokens', link: 'link', compression: 'comp', compress_at: 'at',
    send: 'send', prefill_device: 'dev', devices_per_instance: 'gpus',
    kv_format: 'kvf', weight_format: 'wf', compute_format: 'cf', speculative: 'draft',
  };
  // The formats and the draft are sent only when set (the answer echoes what was sent), so the
  // default request is the one it always was.
  const CALC_OPTIONAL = ['kv_format', 'weight_format', 'compute_format', 'speculative'];
  const calcReq = (o) => {
    const b = { ...o };
    for (const k of CALC_OPTIONAL) if (b[k] === CALC_DEFAULT[k]) delete b[k];
    return b;
  };

  // The scenario options as the catalogue describes them (`options`: each one's page group, a
  // choice's names, a number's bounds): the selects below take their names from there, so a name
  // added to the engine shows up here by itself. LABELS only words some names for the page.
  const opt = (k) => (cat.options || []).find((o) => o.key === k);
  const LABELS = {
    send: { whole: 'after the prefill', layerwise: 'layer by layer' },
    link_sharing: { fifo: 'FIFO', fair: 'fair share' },
    link_topology: { shared: 'one shared link', 'per-prefill': 'one per prefill instance', 'per-pair': 'one per prefill-decode pair' },
    reserve_kv_on: { arrival: 'at arrival', transfer: 'before the transfer' },
    first_token: { prefill: 'prefill token', decode: 'first decode step' },
    mode: { disagg: 'disaggregated' },
    kv_compress_at: { transit: 'in the link', endpoint: 'on the prefill GPU' },
    batch_policy: { chunked: 'chunked prefill' },
    preemption: { swap: 'swap to host' },
    swap_in: { 'own-blocks': 'when its own blocks fit', 'next-step': 'when its next step fits' },
    decode_router: { prefix: 'longest cached prefix' },
    prefix_eviction: { lru: 'least recently used', lfu: 'fewest hits first', fifo: 'oldest first' },
  };
  // A choice option's select: `first` (an unset entry, say), then its names from the catalogue.
  const choices = (k, first = []) => () => first.concat(((opt(k) || {}).choices || []).map((n) => [n, (LABELS[k] || {})[n] || n]));

  // Options the engine may or may not have yet: shown always, disabled when the server does not know them.
  const OPTIONAL = {
    send: { label: 'Send KV' },
    link_sharing: { label: 'Link sharing' },
    link_topology: { label: 'Links' },
    reserve_kv_on: { label: 'Reserve decode KV' },
    first_token: { label: 'TTFT until' },
  };

  const devices = () => cat.devices.map((d) => [d.key, d.name]);
  // Weight, KV-cache and compute formats (levers-cost.md §6), from the catalogue.
  const formats = choices('weight_format');
  // The page's fields, in the page's order; each goes in its option's page group (the catalogue's
  // `options`), the groups in the catalogue's `page_groups` order.
  const FIELDS = [
    { k: 'model', label: 'Model', select: modelOptions },
    { k: 'rate', label: 'Rate (req/s)', num: { min: 0.01, step: 'any' } },
    { k: 'requests', label: 'Requests', num: { min: 1, step: 1 } },
    { k: 'prompt_min', label: 'Shortest prompt (tokens)', num: { min: 1, step: 1 } },
    { k: 'prompt_max', label: 'Longest prompt (tokens)', num: { min: 1, step: 1 } },
    { k: 'output_min', label: 'Shortest output (tokens)', num: { min: 1, step: 1 } },
    { k: 'output_max', label: 'Longest output (tokens)', num: { min: 1, step: 1 } },
    { k: 'prefill', label: 'Prefill instances', num: { min: 1, step: 1 } },
    { k: 'prefill_device', label: 'Prefill device', select: devices, get: (sc) => sc.prefill_device ?? sc.device },
    { k: 'devices_per_instance', label: 'GPUs per instance', num: { min: 1, step: 1 } },
    { k: 'decode', label: 'Decode instances', num: { min: 1, step: 1 } },
    { k: 'decode_device', label: 'Decode device', select: devices, get: (sc) => sc.decode_device ?? sc.device },
    { k: 'mode', label: 'Mode', select: choices('mode') },
    { k: 'link', label: 'Link', select: () => cat.links.map((l) => [l.key, l.name.replace(' (one direction)', '')]) },
    { k: 'link_channels', label: 'Link channels', num: { min: 1, step: 1 } },
    { k: 'kv_compress', label: 'Compression', select: () => [['', 'off']].concat(cat.compression.filter((c) => c.key !== 'none').map((c) => [c.key, c.key])) },
    { k: 'kv_compress_at', label: 'Compress', select: choices('kv_compress_at') },
    { k: 'link_topology', optional: true },
    { k: 'send', optional: true },
    { k: 'link_sharing', optional: true },
    { k: 'reserve_kv_on', optional: true },
    // The fast decode path is the plain engine's: off for the scheduling and cost levers.
    { k: 'fast', label: 'Fast decode path', select: () => [['true', 'on (plain runs)'], ['false', 'off']], bool: true },
    { k: 'batch_policy', label: 'Batch policy', select: choices('batch_policy') },
    { k: 'max_num_batched_tokens', label: 'Token budget (tokens)', num: { min: 1, step: 1 }, blank: true },
    { k: 'kv_policy', label: 'KV policy', select: choices('kv_policy') },
    { k: 'kv_block_size', label: 'KV block (tokens)', num: { min: 1, step: 1 } },
    { k: 'max_seq_len', label: 'Max seq len (tokens)', num: { min: 0, step: 1 } },
    { k: 'max_decode_batch', label: 'Max decode batch', num: { min: 1, step: 1 } },
    { k: 'preemption', label: 'Preemption', select: choices('preemption') },
    { k: 'swap_in', label: 'Swap in', select: choices('swap_in') },
    { k: 'host_link', label: 'Host link', select: () => cat.links.map((l) => [l.key, l.name.replace(' (one direction)', '')]) },
    { k: 'prefix_caching', label: 'Prefix caching', select: () => [['false', 'off'], ['true', 'on']], bool: true },
    // Left out of the scenario's JSON at its default: the select shows the default then.
    { k: 'prefix_eviction', label: 'Prefix eviction', select: choices('prefix_eviction'), get: (sc) => sc.prefix_eviction ?? opt('prefix_eviction').default },
    { k: 'speculative', label: 'Speculative draft', select: () => [['', 'off'], ['mtp', 'MTP head']].concat(modelOptions()) },
    { k: 'gamma', label: 'Drafted tokens (gamma)', num: { min: 1, step: 1 } },
    { k: 'alpha', label: 'Acceptance (alpha)', num: { min: 0, step: 'any' } },
    { k: 'spec_seed', label: 'Acceptance seed', num: { min: 0, step: 1 } },
    { k: 'prefix_handoff', label: 'Prefix-aware hand-off', select: () => [['false', 'off'], ['true', 'on']], bool: true },
    { k: 'decode_router', label: 'Decode router', select: choices('decode_router') },
    { k: 'tp', label: 'Tensor parallel (tp)', num: { min: 1, step: 1 }, blank: true },
    { k: 'pp', label: 'Pipeline stages (pp)', num: { min: 1, step: 1 }, blank: true },
    { k: 'weight_format', label: 'Weight format', select: formats },
    { k: 'kv_format', label: 'KV cache format', select: formats },
    { k: 'compute_format', label: 'Compute format', select: formats },
    { k: 'ppa', label: 'Area and cost (PPA)', select: () => [['false', 'off'], ['true', 'on']], bool: true },
    { k: 'fft_efficiency', label: 'FFT efficiency', num: { min: 0, step: 'any' }, blank: true },
    { k: 'ft_enob', label: 'Optical engine ENOB (bits)', num: { min: 1, step: 1 }, blank: true },
    { k: 'ft_mask_rate', label: 'Mask rewrites (Hz)', num: { min: 0, step: 'any' }, blank: true },
    { k: 'ft_overlap', label: 'Optical and GPU overlap', select: () => [['false', 'off'], ['true', 'on']], bool: true },
    { k: 'ced_replay_on', label: 'CED replay on', select: choices('ced_replay_on', [['', 'unset']]) },
    { k: 'ttft_slo', label: 'TTFT SLO (ms)', num: { min: 1, step: 'any' }, scale: 1000 },
    { k: 'tpot_slo', label: 'TPOT SLO (ms)', num: { min: 0.1, step: 'any' }, scale: 1000 },
    { k: 'first_token', optional: true },
  ];

  const cfgs = {
    a: { id: 'a', on: true, preset: 'link-ib-ndr', sc: null, seq: 0, result: null, sweep: null, err: null, retried: {}, bad: new Set() },
    b: { id: 'b', on: true, preset: 'link-eth-25g', sc: null, seq: 0, result: null, sweep: null, err: null, retried: {}, bad: new Set() },
  };
  const supported = {};

  // ---- calculator -----------------------------------------------------------------------------

  // `opts`: [value, text] pairs, or {group, opts} for an <optgroup> of them.
  function fillSelect(sel, opts, value) {
    const one = ([v, t]) => `<option value="${esc(v)}">${esc(t)}</option>`;
    sel.innerHTML = opts.map((o) => (Array.isArray(o) ? one(o)
      : `<optgroup label="${esc(o.group)}">${o.opts.map(one).join('')}</optgroup>`)).join('');
    if (value !== undefined) sel.value = value;
  }

  // ---- the models: the served ones (issue 16, with layer kinds) in their own group -------------

  const SERVED_GROUP = 'Served today (issue 16)';
  // The picker's options: the other models as they always were, then the served ones grouped.
  function modelOptions() {
    const pair = (m) => [m.key, m.name];
    const served = cat.models.filter((m) => m.kv_kinds);
    const rest = cat.models.filter((m) => !m.kv_kinds).map(pair);
    return served.length ? rest.concat([{ group: SERVED_GROUP, opts: served.map(pair) }]) : rest;
  }
  const KIND_NAMES = {
    mla: 'MLA', full: 'full-attention', sliding: 'sliding-window', chunked: 'chunked', linear: 'linear-attention',
  };
  const layers = (n, kind) => `${thousands(n)} ${KIND_NAMES[kind] || kind} layer${n === 1 ? '' : 's'}`;
  // The per-token figures of a model with layer kinds, every number the server's: the unbounded
  // layers' bytes a token, each window's (and what it holds at most), the fixed linear state.
  function kvFigures(m) {
    const k = m.kv_kinds;
    const grows = Object.keys(k).filter((x) => x === 'mla' || x === 'full');
    const parts = [];
    if (grows.length) {
      parts.push(`${bytes(m.kv_bytes_per_token)}/token (${grows.map((x) => layers(k[x], x)).join(', ')})`);
    }
    for (const w of m.kv_windows || []) {
      parts.push(`${bytes(w.kv_bytes_per_token)}/token for the last ${thousands(w.tokens)} tokens only `
        + `(${layers(w.layers, w.kind)}, at most ${bytes(w.kv_bytes_per_token * w.tokens)})`);
    }
    if (m.state_bytes_per_request > 0) {
      parts.push(`a fixed ${bytes(m.state_bytes_per_request)} state a request (${layers(k.linear || 0, 'linear')})`);
    }
    return parts.join(' + ');
  }
  // The line under the picker: why the model's KV is different, and its figures; empty for a model
  // without layer kinds.
  function showModelWhy(key) {
    const el = $('#calc-model-why');
    const m = cat.models.find((x) => x.key === key);
    if (!m || !m.kv_kinds) {
      el.textContent = '';
      el.hidden = true;
      return;
    }
    el.innerHTML = `<span class="why-text">${esc(m.why_kv)}</span> · <span class="why-figures">${esc(kvFigures(m))}</span>`;
    el.title = m.source ? `Source: ${m.source}` : '';
    el.hidden = false;
  }

  function buildCalc() {
    fillSelect($('#calc-model'), modelOptions());
    fillSelect($('#calc-link'), cat.links.map((l) => [l.key, `${l.name.replace(' (one direction)', '')} · ${gbps(l.bandwidth_bps)}`]));
    fillSelect($('#calc-compression'), cat.compression.map((c) => [c.key, c.key === 'none' ? 'none (BF16)' : c.key]));
    fillSelect($('#calc-device'), devices());
    for (const id of ['#calc-kv-format', '#calc-weight-format', '#calc-compute-format']) fillSelect($(id), formats());
    fillSelect($('#calc-draft'), [['', 'off'], ['mtp', 'MTP head']].concat(modelOptions()));
    const form = $('#calc-form');
    form.addEventListener('submit', (e) => e.preventDefault());
    const range = $('#calc-tokens-range');
    const num = $('#calc-tokens');
    range.addEventListener('input', () => {
      num.value = range.value;
      setCalc('prompt_tokens', Number(range.value));
    });
    num.addEventListener('input', () => {
      const v = Number(num.value);
      if (num.value === '' || !Number.isFinite(v)) {
        calcInvalid(num, 'prompt_tokens', 'Prompt tokens: enter a whole number, 1 or more');
        return;
      }
      range.value = String(Math.min(Math.max(v, 256), 32768));
      setCalc('prompt_tokens', v);
    });
    for (const [id, key] of [['#calc-model', 'model'], ['#calc-link', 'link'], ['#calc-compression', 'compression'],
      ['#calc-at', 'compress_at'], ['#calc-device', 'prefill_device'], ['#calc-kv-format', 'kv_format'],
      ['#calc-weight-format', 'weight_format'], ['#calc-compute-format', 'compute_format'], ['#calc-draft', 'speculative']]) {
      $(id).addEventListener('change', (e) => setCalc(key, e.target.value));
    }
    $('#calc-gpus').addEventListener('input', (e) => {
      const v = Number(e.target.value);
      if (e.target.value === '' || !Number.isFinite(v)) {
        calcInvalid(e.target, 'devices_per_instance', 'GPUs per instance: enter a whole number, 1 or more');
        return;
      }
      setCalc('devices_per_instance', v);
    });
    for (const r of form.querySelectorAll('input[name="send"]')) {
      r.addEventListener('change', () => { if (r.checked) setCalc('send', r.value); });
    }
  }

  function syncCalcControls() {
    $('#calc-model').value = calc.model;
    showModelWhy(calc.model);
    $('#calc-tokens').value = String(calc.prompt_tokens);
    $('#calc-tokens-range').value = String(Math.min(Math.max(calc.prompt_tokens, 256), 32768));
    $('#calc-link').value = calc.link;
    $('#calc-compression').value = calc.compression;
    $('#calc-at').value = calc.compress_at;
    $('#calc-device').value = calc.prefill_device;
    $('#calc-gpus').value = String(calc.devices_per_instance);
    $('#calc-kv-format').value = calc.kv_format;
    $('#calc-weight-format').value = calc.weight_format;
    $('#calc-compute-format').value = calc.compute_format;
    $('#calc-draft').value = calc.speculative;
    for (const r of document.querySelectorAll('#calc-form input[name="send"]')) r.checked = r.value === calc.send;
    $('#calc-at').disabled = calc.compression === 'none';
  }

  // Answers are drawn as soon as they are known. A cache of exact server answers, filled in the
  // background for every slider position and every alternative of each menu, lets most changes
  // redraw synchronously in the input event (the same frame); a miss asks the server and redraws
  // on the next animation frame.
  let calcSeq = 0;
  let calcDrawn = 0;
  let calcInFlight = false;
  let calcDirty = false;
  let calcInputAt = 0;
  let lastCalc = null;
  const calcCache = new Map();
  const calcBad = new Set(); // inputs whose text is not a number: nothing is shown until fixed
  let simBusy = 0; // simulations in flight: the background prefetch waits for them
  const calcKey = (o) => JSON.stringify(Object.keys(CALC_DEFAULT).map((k) => o[k]));
  const recordDraw = (t0, hit) => {
    perf.calcDraws.push(performance.now() - t0);
    perf.calcHits.push(hit);
    if (perf.calcDraws.length > 500) { perf.calcDraws.shift(); perf.calcHits.shift(); }
  };

  // An input the page cannot send: the error goes next to it, and the numbers of the last good
  // state are taken off (they no longer answer what the form shows).
  function calcInvalid(el, key, msg) {
    calcBad.add(key);
    fieldError(el, msg);
    calcDrawn = ++calcSeq; // answers in flight are for an older state
    calcDirty = false;
    clearTimeout(prefetchTimer);
    prefetchGen++;
    clearCalcResult();
  }

  function clearCalcResult() {
    for (const id of ['t-kv', 't-wire', 't-transfer', 't-prefill', 't-exposed', 't-full']) $(`#${id}`).textContent = '–';
    for (const id of ['t-kv-s', 't-wire-s', 't-transfer-s', 't-prefill-s']) $(`#${id}`).textContent = '';
    $('#calc-tiles').classList.add('stale');
    $('#calc-chart').textContent = '';
    lastCalc = null;
    lastRanks = null;
    $('#ranks-chart').textContent = '';
  }

  // The input that field `key` of a calculator request comes from.
  function calcInput(key) {
    return $(`#calc-form [name="${key}"]:not([type="radio"])`) || (key === 'send' ? $('#calc-send-whole') : null);
  }

  function setCalc(key, value) {
    calcBad.delete(key);
    const input = calcInput(key);
    if (input) fieldError(input, '');
    calc[key] = value;
    if (key === 'model') showModelWhy(value);
    calcInputAt = performance.now();
    $('#calc-at').disabled = calc.compression === 'none';
    writeUrl();
    if (calcBad.size) return;
    const hit = calcCache.get(calcKey(calc));
    if (hit) {
      calcDrawn = ++calcSeq;
      drawCalc({ status: 200, body: hit }, { ...calc });
      recordDraw(calcInputAt, true);
      schedulePrefetch();
      return;
    }
    if (calcInFlight) { calcDirty = true; return; }
    sendCalc();
  }

  async function sendCalc() {
    calcInFlight = true;
    calcDirty = false;
    const seq = ++calcSeq;
    const body = { ...calc };
    const t0 = calcInputAt || performance.now();
    const r = await api('/api/handoff', calcReq(body));
    if (r.status === 200) calcCache.set(calcKey(body), r.body);
    calcInFlight = false;
    if (calcDirty) sendCalc();
    requestAnimationFrame(() => {
      if (seq < calcDrawn || calcBad.size) return;
      calcDrawn = seq;
      drawCalc(r, body);
      recordDraw(t0, false);
    });
    if (r.status === 200) schedulePrefetch();
  }

  // Fills the cache around the current state (every menu alternative, the slider positions nearest
  // first) with one batched request (`"batch": [...]`, up to the server's max_handoff_batch), a
  // quarter second after the last change; starts over whenever the state changes. A server without
  // batches gets no prefetch (never one request per alternative).
  let prefetchTimer = null;
  let prefetchGen = 0;
  let batchOk = true;
  function schedulePrefetch() {
    clearTimeout(prefetchTimer);
    const gen = ++prefetchGen;
    perf.prefetchIdle = false;
    prefetchTimer = setTimeout(() => prefetch(gen), 250);
  }
  async function prefetch(gen) {
    if (!perf.ready || simBusy > 0) { prefetchTimer = setTimeout(() => prefetch(gen), 100); return; }
    const max = (cat.limits && cat.limits.max_handoff_batch) || 0;
    if (!batchOk || !max || calcBad.size) { perf.prefetchIdle = true; return; }
    const base = { ...calc };
    const todo = [];
    const range = $('#calc-tokens-range');
    const [lo, hi, step] = [Number(range.min), Number(range.max), Number(range.step)];
    const here = Math.min(Math.max(base.prompt_tokens, lo), hi);
    const slots = [];
    for (let v = lo; v <= hi; v += step) slots.push(v);
    slots.sort((a, b) => Math.abs(a - here) - Math.abs(b - here));
    const menus = {
      link: cat.links.map((l) => l.key),
      compression: cat.compression.map((c) => c.key),
      compress_at: cat.compress_at.map((a) => a.alias),
      send: opt('send').choices,
      model: cat.models.map((m) => m.key),
      prefill_device: cat.devices.map((d) => d.key),
    };
    for (const [k, vals] of Object.entries(menus)) for (const v of vals) todo.push([k, v]);
    for (const v of slots) todo.push(['prompt_tokens', v]);
    if (calcCache.size + todo.length > 20000) calcCache.clear();
    const seen = new Set();
    const queue = todo.filter(([k, v]) => {
      const key = calcKey({ ...base, [k]: v });
      if (calcCache.has(key) || seen.has(key)) return false;
      seen.add(key);
      return true;
    }).slice(0, max);
    if (queue.length) {
      perf.handoffBatches++;
      const r = await api('/api/handoff', { ...calcReq(base), batch: queue.map(([k, v]) => ({ [k]: v })) });
      if (r.status === 200 && Array.isArray(r.body.batch)) {
        r.body.batch.forEach((v, i) => {
          const [k, x] = queue[i];
          if (v && !v.error) calcCache.set(calcKey({ ...base, [k]: x }), v);
        });
      } else if (r.status === 400 && r.body.field === 'batch') {
        batchOk = false;
      }
    }
    if (gen !== prefetchGen) return;
    perf.prefetchIdle = true;
  }

  function drawCalc(r, req) {
    const err = $('#calc-error');
    if (r.status !== 200) {
      // The error next to the input it is about (else under the form); no numbers of another state.
      const msg = r.body.error || `error ${r.status}`;
      const input = r.body.field && calcInput(r.body.field);
      if (input) fieldError(input, msg);
      err.textContent = input ? '' : msg;
      err.hidden = !!input;
      clearCalcResult();
      return;
    }
    err.hidden = true;
    clearFieldErrors($('#calc-form'));
    $('#calc-tiles').classList.remove('stale');
    const h = r.body;
    lastCalc = { h, req };
    $('#t-kv').textContent = bytes(h.kv_bytes);
    $('#t-kv-s').textContent = `${thousands(h.prompt_tokens)} tokens${h.kv_format && h.kv_format !== 'bf16' ? ` in ${h.kv_format}` : ''}${h.speculative ? `, the ${h.speculative} draft's too` : ''}`;
    $('#t-wire').textContent = bytes(h.wire_bytes);
    $('#t-wire-s').textContent = h.compression_ratio === 1 ? 'uncompressed' : `${fixed(h.compression_ratio, 2)}x smaller (${h.compression})`;
    $('#t-transfer').textContent = time1(h.transfer_s);
    $('#t-transfer-s').textContent = `${h.link_name.replace(' (one direction)', '')}, ${gbps(h.link_bandwidth_bps)}${h.transit_bound ? ', compressor-bound' : ''}`;
    $('#t-prefill').textContent = time1(h.prefill_s);
    const dev = cat.devices.find((d) => d.key === h.prefill_device);
    $('#t-prefill-s').textContent = `${h.devices_per_instance}x ${dev ? dev.name : h.prefill_device}`;
    $('#t-exposed').textContent = time1(h.exposed_s);
    $('#t-full').textContent = rps(h.link_saturation_rps);
    drawTimeline();
    sendRanks();
  }

  // ---- rank by rank (issue 13 §3): the same /api/handoff with handoff_ranks, only when open ----

  let ranksSeq = 0;
  let lastRanks = null;

  async function sendRanks() {
    if (!$('#ranks').open) return;
    const seq = ++ranksSeq;
    if (!lastCalc) {
      lastRanks = null;
      drawRanks();
      return;
    }
    const body = { ...calcReq(lastCalc.req), handoff_ranks: true };
    const dtp = $('#ranks-decode-tp').value;
    const nics = $('#ranks-nics').value;
    if (dtp) body.decode_tp = Number(dtp);
    if (nics) body.nics_per_instance = Number(nics);
    const r = await api('/api/handoff', body);
    if (seq !== ranksSeq) return;
    const err = $('#ranks-error');
    err.textContent = r.status === 200 ? '' : (r.body.error || `error ${r.status}`);
    err.hidden = r.status === 200;
    lastRanks = r.status === 200 ? r.body.ranks : null;
    drawRanks();
  }

  // One row per NIC (at most 16 a side): its link latency, then its bytes / bandwidth, every flow
  // ready when the prefill ends; the single transfer as the reference row.
  function drawRanks() {
    const box = $('#ranks-chart');
    const p = lastRanks;
    if (!p || !lastCalc) {
      box.textContent = '';
      return;
    }
    const latency = lastCalc.h.link_latency_s;
    const W = Math.max(300, Math.round(box.clientWidth || 600));
    const narrow = W < 480;
    const MAX = 16;
    const rows = [];
    for (const side of ['prefill', 'decode']) {
      for (const n of p.nics.filter((x) => x.side === side).slice(0, MAX)) rows.push(n);
    }
    const rowH = 16;
    const m = { l: narrow ? 44 : 96, r: 14, t: 24, b: 30 };
    const H = m.t + (rows.length + 1) * (rowH + 4) + 8 + m.b;
    const xMax = Math.max(p.total_s, p.single_transfer_s) * 1.04;
    const X = (t) => m.l + (t / xMax) * (W - m.l - m.r);
    let s = '';
    for (const t of niceTicks(0, xMax * 1e3, narrow ? 4 : 7)) {
      const x = X(t / 1e3);
      s += `<line class="grid-line" x1="${x}" x2="${x}" y1="${m.t - 6}" y2="${H - m.b}"/>`;
      s += `<text class="tick" x="${x}" y="${H - m.b + 16}" text-anchor="middle">${tickFmt(t)}</text>`;
    }
    s += `<text class="tick" x="${W - m.r}" y="${H - 2}" text-anchor="end">ms</text>`;
    let y = m.t;
    const row = (label, cls, busy) => {
      s += `<text class="row-t" x="${m.l - 8}" y="${y + rowH - 4}" text-anchor="end">${esc(label)}</text>`;
      if (cls === 'bar-single') {
        s += `<rect class="bar-single" x="${X(0)}" y="${y}" width="${Math.max(1, X(busy) - X(0))}" height="${rowH}" rx="2"/>`;
      } else if (busy > 0) {
        s += `<rect class="bar-latency" x="${X(0)}" y="${y}" width="${Math.max(0.5, X(latency) - X(0))}" height="${rowH}"/>`;
        s += `<rect class="bar-nic bar-transfer" x="${X(latency)}" y="${y}" width="${Math.max(1, X(latency + busy) - X(latency))}" height="${rowH}" rx="2"/>`;
      }
      y += rowH + 4;
    };
    for (const n of rows) row(`${narrow ? (n.side === 'prefill' ? 'P' : 'D') : n.side === 'prefill' ? 'prefill ' : 'decode '}${n.nic}`, 'bar-nic', n.busy_s);
    y += 8;
    row(narrow ? '1x' : 'one transfer', 'bar-single', p.single_transfer_s);
    // The hand-off's end (copies and the gather pass included).
    const x1 = X(p.total_s);
    s += `<line class="exposed-line" x1="${x1}" x2="${x1}" y1="${m.t - 6}" y2="${y - 12}"/>`;
    const label = `hand-off ${time1(p.total_s)}`;
    s += `<text class="exposed-t" x="${Math.min(Math.max(x1, m.l + 60), W - m.r - 60)}" y="${m.t - 10}" text-anchor="middle">${esc(label)}</text>`;
    const pl = p.layouts.prefill;
    const dl = p.layouts.decode;
    const more = p.nics.length - rows.length;
    const cap = `${pl.label} (${pl.nics} NIC${pl.nics === 1 ? '' : 's'}) → ${dl.label} (${dl.nics} NIC${dl.nics === 1 ? '' : 's'}): `
      + `${p.flows.length} flow${p.flows.length === 1 ? '' : 's'}, hand-off ${time1(p.total_s)} against ${time1(p.single_transfer_s)} as one transfer (${fixed(p.speedup, 2)}x)`
      + `${p.replicate_bytes > 0 ? `, ${bytes(p.replicate_bytes)} copied over the decode scale-up link` : ''}${more > 0 ? `; ${more} more NICs not drawn` : ''}`;
    $('#ranks-cap').textContent = cap;
    box.innerHTML = `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(cap)}">${s}</svg>`;
  }

  function drawTimeline() {
    if (!lastCalc) return;
    const { h } = lastCalc;
    const box = $('#calc-chart');
    const model = cat.models.find((m) => m.key === h.model);
    const L = model ? model.n_layers : 1;
    const W = Math.max(300, Math.round(box.clientWidth || 600));
    const narrow = W < 480;
    const H = 148;
    const m = { l: narrow ? 64 : 92, r: 14, t: 24, b: 30 };
    const tp = h.prefill_s;
    // The fixed part of the transfer: link latency, plus the in-link stage's 1 µs when compressing there.
    const fixedS = h.link_latency_s + (h.compression !== 'none' && h.compress_at === 'transit' ? 1e-6 : 0);
    const stream = Math.max(0, h.transfer_s - fixedS);
    const end = tp + h.exposed_s;
    const xMax = Math.max(end, tp) * 1.04;
    const X = (t) => m.l + (t / xMax) * (W - m.l - m.r);
    const rowP = [m.t, 30];
    const rowT = [m.t + 44, 30];
    let s = '';
    for (const t of niceTicks(0, xMax * 1e3, narrow ? 4 : 7)) {
      const x = X(t / 1e3);
      s += `<line class="grid-line" x1="${x}" x2="${x}" y1="${m.t - 6}" y2="${H - m.b}"/>`;
      s += `<text class="tick" x="${x}" y="${H - m.b + 16}" text-anchor="middle">${tickFmt(t)}</text>`;
    }
    s += `<text class="tick" x="${W - m.r}" y="${H - 2}" text-anchor="end">ms</text>`;
    s += `<text class="row-t" x="${m.l - 10}" y="${rowP[0] + 19}" text-anchor="end">Prefill</text>`;
    s += `<text class="row-t" x="${m.l - 10}" y="${rowT[0] + 19}" text-anchor="end">${narrow ? 'KV' : 'KV transfer'}</text>`;
    s += `<rect class="bar-prefill" x="${X(0)}" y="${rowP[0]}" width="${Math.max(1, X(tp) - X(0))}" height="${rowP[1]}" rx="3"/>`;
    if (lastCalc.req.send === 'layerwise' && L > 1) {
      const pxPerLayer = (X(tp) - X(0)) / L;
      if (pxPerLayer >= 3) {
        for (let i = 1; i < L; i++) {
          const x = X((i * tp) / L);
          s += `<line class="layer-tick" x1="${x}" x2="${x}" y1="${rowP[0]}" y2="${rowP[0] + rowP[1]}"/>`;
        }
      }
      // Slice i leaves when layer i is done and the previous slice has left.
      const slice = stream / L;
      let t = 0;
      let rects = '';
      for (let i = 0; i < L; i++) {
        const start = Math.max(((i + 1) * tp) / L, t);
        t = start + slice;
        const x0 = X(fixedS + start);
        const w = Math.max(0.8, X(fixedS + t) - x0 - (X(slice) - X(0) > 3 ? 1 : 0));
        rects += `<rect class="bar-transfer" x="${x0}" y="${rowT[0]}" width="${w}" height="${rowT[1]}"/>`;
      }
      s += rects;
    } else {
      s += `<rect class="bar-transfer" x="${X(tp)}" y="${rowT[0]}" width="${Math.max(1, X(tp + h.transfer_s) - X(tp))}" height="${rowT[1]}" rx="3"/>`;
    }
    // The exposed part: from the end of the prefill to the last byte.
    const y = rowT[0] + rowT[1] + 10;
    const x0 = X(tp);
    const x1 = X(end);
    s += `<line class="exposed-line" x1="${x0}" x2="${x1}" y1="${y}" y2="${y}"/>`;
    s += `<line class="exposed-line" x1="${x0}" x2="${x0}" y1="${y - 5}" y2="${y + 5}"/>`;
    s += `<line class="exposed-line" x1="${x1}" x2="${x1}" y1="${y - 5}" y2="${y + 5}"/>`;
    s += `<line class="ax" x1="${x0}" x2="${x0}" y1="${m.t - 8}" y2="${rowT[0] + rowT[1]}" stroke-dasharray="3 3"/>`;
    const label = `exposed ${time1(h.exposed_s)}`;
    const lx = Math.min(Math.max((x0 + x1) / 2, m.l + 60), W - m.r - 60);
    s += `<text class="exposed-t" x="${lx}" y="${m.t - 10}" text-anchor="middle">${esc(label)}</text>`;
    const desc = `Prefill ${time1(tp)}, then the KV transfer ${lastCalc.req.send === 'layerwise' ? `in ${L} layer slices` : 'after the whole prefill'}; ${label} after the prefill.`;
    box.innerHTML = `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(desc)}">${s}</svg>`;
  }

  // ---- charts -----------------------------------------------------------------------------------

  function niceTicks(lo, hi, n) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const raw = span / n;
    const mag = 10 ** Math.floor(Math.log10(raw));
    const r = raw / mag;
    const step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  }
  function logTicks(lo, hi) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const k of [1, 2, 5]) {
        const v = k * 10 ** e;
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push(+v.toPrecision(6));
      }
    }
    if (out.length > 8) return out.filter((v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
    return out;
  }

  // A line chart: o = {series: [{cls, pts: [[x, y]], dots}], xLog, xLabel, yLabel, yMin, yMax,
  // hlines: [{y, label}], vlines: [{x}], label, yFmt}.
  function lineChart(box, o) {
    const W = Math.max(260, Math.round(box.clientWidth || 360));
    const H = o.height || 210;
    const m = { l: 46, r: 12, t: o.yLabel ? 24 : 12, b: 38 };
    const all = o.series.flatMap((s) => s.pts).filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!o.xLog || p[0] > 0));
    if (!all.length) {
      box.innerHTML = `<p class="chart-msg">${esc(o.empty || 'no data')}</p>`;
      return;
    }
    let x0 = Math.min(...all.map((p) => p[0]));
    let x1 = Math.max(...all.map((p) => p[0]));
    for (const v of o.vlines || []) if (Number.isFinite(v.x)) { x0 = Math.min(x0, v.x); x1 = Math.max(x1, v.x); }
    for (const v of o.xlines || []) if (Number.isFinite(v.x) && v.x > 0) { x0 = Math.min(x0, v.x); x1 = Math.max(x1, v.x); }
    if (o.xLog) {
      x0 /= 1.15; x1 *= 1.15;
      if (x1 / x0 < 3) { const c = Math.sqrt(x0 * x1); x0 = c / 1.8; x1 = c * 1.8; }
    } else {
      if (o.xMin !== undefined) x0 = o.xMin;
      if (x1 <= x0) x1 = x0 + 1;
    }
    let y0 = o.yMin ?? Math.min(...all.map((p) => p[1]));
    let y1 = o.yMax ?? Math.max(...all.map((p) => p[1]));
    for (const hl of o.hlines || []) if (Number.isFinite(hl.y) && o.yMax === undefined) y1 = Math.max(y1, hl.y * 1.1);
    if (o.yMax === undefined) y1 = y1 > 0 ? y1 * 1.08 : 1;
    if (y1 <= y0) y1 = y0 + 1;
    const lx = (v) => (o.xLog ? Math.log10(v) : v);
    const X = (v) => m.l + ((lx(v) - lx(x0)) / (lx(x1) - lx(x0))) * (W - m.l - m.r);
    const Y = (v) => H - m.b - ((v - y0) / (y1 - y0)) * (H - m.t - m.b);
    let s = '';
    const yt = niceTicks(y0, y1, 4);
    for (const t of yt) {
      if (t < y0 - 1e-12 || t > y1 + 1e-12) continue;
      s += `<line class="grid-line" x1="${m.l}" x2="${W - m.r}" y1="${Y(t)}" y2="${Y(t)}"/>`;
      s += `<text class="tick" x="${m.l - 6}" y="${Y(t) + 4}" text-anchor="end">${(o.yFmt || tickFmt)(t)}</text>`;
    }
    const xt = o.xLog ? logTicks(x0, x1) : niceTicks(x0, x1, W < 340 ? 4 : 6);
    for (const t of xt) {
      if (t < x0 || t > x1) continue;
      s += `<line class="ax" x1="${X(t)}" x2="${X(t)}" y1="${H - m.b}" y2="${H - m.b + 4}"/>`;
      s += `<text class="tick" x="${X(t)}" y="${H - m.b + 16}" text-anchor="middle">${tickFmt(t)}</text>`;
    }
    s += `<line class="ax" x1="${m.l}" x2="${W - m.r}" y1="${H - m.b}" y2="${H - m.b}"/>`;
    s += `<text class="ax-label" x="${(m.l + W - m.r) / 2}" y="${H - 4}" text-anchor="middle">${esc(o.xLabel)}</text>`;
    if (o.yLabel) s += `<text class="ax-label" x="2" y="11">${esc(o.yLabel)}</text>`;
    for (const v of o.vlines || []) {
      if (!Number.isFinite(v.x) || v.x < x0 || v.x > x1) continue;
      s += `<line class="now" x1="${X(v.x)}" x2="${X(v.x)}" y1="${m.t}" y2="${H - m.b}"/>`;
    }
    for (const v of o.xlines || []) {
      if (!Number.isFinite(v.x) || v.x < x0 || v.x > x1) continue;
      s += `<line class="slo" x1="${X(v.x)}" x2="${X(v.x)}" y1="${m.t}" y2="${H - m.b}"/>`;
      s += `<text class="slo-t" x="${X(v.x) - 4}" y="${m.t + 10}" text-anchor="end">${esc(v.label)}</text>`;
    }
    for (const hl of o.hlines || []) {
      if (!Number.isFinite(hl.y) || hl.y < y0 || hl.y > y1) continue;
      s += `<line class="slo" x1="${m.l}" x2="${W - m.r}" y1="${Y(hl.y)}" y2="${Y(hl.y)}"/>`;
      s += `<text class="slo-t" x="${W - m.r - 2}" y="${Y(hl.y) - 5}" text-anchor="end">${esc(hl.label)}</text>`;
    }
    for (const ser of o.series) {
      const pts = ser.pts.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!o.xLog || p[0] > 0));
      if (!pts.length) continue;
      const d = pts.map((p, i) => `${i ? 'L' : 'M'}${X(p[0]).toFixed(1)},${Y(Math.min(Math.max(p[1], y0), y1)).toFixed(1)}`).join('');
      s += `<path class="ln ${ser.cls}" d="${d}"/>`;
      if (ser.dots) for (const p of pts) s += `<circle class="${ser.dots}" cx="${X(p[0]).toFixed(1)}" cy="${Y(p[1]).toFixed(1)}" r="3"/>`;
    }
    box.innerHTML = `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(o.label)}">${s}</svg>`;
  }

  const activeCfgs = () => ['a', 'b'].filter((id) => cfgs[id].on && cfgs[id].result);
  const cls = (id) => `ln-${id}`;

  function drawCdf(boxId, key, what, sloKey) {
    const series = activeCfgs().map((id) => {
      const v = cfgs[id].result.latency_samples?.[key] || [];
      const n = v.length;
      return { cls: cls(id), pts: v.map((x, i) => [x * 1e3, n > 1 ? (100 * i) / (n - 1) : 100]) };
    });
    const xlines = [];
    if (sloKey) {
      const slos = new Set(activeCfgs().map((id) => cfgs[id].result.scenario[sloKey]));
      for (const v of slos) xlines.push({ x: v * 1e3, label: slos.size > 1 ? '' : 'SLO' });
    }
    lineChart($(boxId), {
      series, xLog: true, xLabel: `${what} (ms, log scale)`, yLabel: '% of requests', yMin: 0, yMax: 100, xlines,
      label: `${what} distribution of ${activeCfgs().map((id) => id.toUpperCase()).join(' and ')}`,
      empty: 'no samples',
    });
  }

  function mean(rows) {
    if (!rows.length) return [];
    return rows[0].map((_, i) => rows.reduce((a, r) => a + r[i], 0) / rows.length);
  }

  function drawUtil(id) {
    const box = $(`#ch-util-${id}`);
    const c = cfgs[id];
    const se = c.result?.series;
    if (!c.on) return;
    if (!se) { box.innerHTML = `<p class="chart-msg">${esc(c.err ? 'no run' : 'running…')}</p>`; return; }
    // At most ~48 points: the server's buckets averaged in groups, so the lines read as trends.
    const g = Math.max(1, Math.ceil(se.t_s.length / 48));
    const coarse = (v) => {
      const out = [];
      for (let i = 0; i < v.length; i += g) {
        const part = v.slice(i, i + g);
        out.push([se.t_s[i] + (part.length * se.dt_s) / 2, (100 * part.reduce((a, x) => a + x, 0)) / part.length]);
      }
      return out;
    };
    const pool = (role) => mean(se.instances.filter((i) => i.role === role).map((i) => i.busy));
    const roles = [...new Set(se.instances.map((i) => i.role))];
    const styles = { prefill: 'ln-thin ln-p', decode: 'ln-thin ln-d ln-dash', colocated: 'ln-thin ln-p' };
    const lines = roles.map((role) => ({ cls: styles[role], pts: coarse(pool(role)) }));
    lines.push({ cls: `${cls(id)}`, pts: coarse(se.link_busy) });
    lineChart(box, {
      series: lines, xLabel: 'simulated time (s)', yLabel: '% busy', yMin: 0, yMax: 100, xMin: 0,
      label: `Utilisation over time of ${id.toUpperCase()}: KV link and ${roles.join(' and ')} pools`,
    });
    let leg = box.nextElementSibling;
    if (!leg || !leg.classList.contains('legend')) {
      leg = document.createElement('div');
      leg.className = 'legend';
      leg.setAttribute('aria-hidden', 'true');
      box.after(leg);
    }
    leg.innerHTML = `<span><i class="sw sw-${id}"></i>KV link</span>` +
      roles.map((r) => `<span><i class="sw sw-${r === 'decode' ? 'd' : 'p'}"></i>${r} pool</span>`).join('');
  }

  const SWEEP = {
    tpot_p99_s: { label: 'TPOT p99 (ms)', scale: 1e3, slo: 'tpot_slo' },
    ttft_p99_s: { label: 'TTFT p99 (ms)', scale: 1e3, slo: 'ttft_slo' },
    handoff_p99_s: { label: 'hand-off p99 (ms)', scale: 1e3 },
    slo_attainment: { label: 'SLOs met (%)', scale: 100, yMax: 100 },
    goodput_rps: { label: 'goodput (req/s)', scale: 1 },
    link_busy: { label: 'link busy (%)', scale: 100, yMax: 100 },
  };

  function drawSweep() {
    const key = $('#sweep-metric').value;
    const spec = SWEEP[key];
    const ids = ['a', 'b'].filter((id) => cfgs[id].on && cfgs[id].sweep);
    const series = ids.map((id) => ({
      cls: cls(id), dots: `dot-${id}`,
      pts: cfgs[id].sweep.runs.map((r) => [r.rate, r[key] === null ? NaN : r[key] * spec.scale]),
    }));
    const hlines = [];
    if (spec.slo) {
      // An SLO not given is the named workload's (not echoed: no line) or the default.
      const dflt = { ttft_slo: 1.0, tpot_slo: 0.025 };
      const slo = (sc) => sc[spec.slo] ?? (sc.workload ? null : dflt[spec.slo]);
      const slos = new Set(ids.map((id) => slo(cfgs[id].sweep.scenario)).filter((v) => v != null));
      for (const v of slos) hlines.push({ y: v * 1e3, label: 'SLO' });
    }
    const vlines = ids.map((id) => ({ x: cfgs[id].sc.rate }));
    lineChart($('#ch-sweep'), {
      series, xLabel: 'request rate (req/s)', yLabel: spec.label, yMin: 0, yMax: spec.yMax, hlines, vlines, xMin: 0,
      label: `${spec.label} against the request rate`, empty: 'sweeping…',
      yFmt: (v) => tickFmt(v),
    });
  }

  function drawCharts() {
    drawCdf('#ch-ttft', 'ttft_s', 'TTFT', 'ttft_slo');
    drawCdf('#ch-tpot', 'tpot_s', 'TPOT', 'tpot_slo');
    drawCdf('#ch-handoff', 'handoff_s', 'hand-off', null);
    drawUtil('a');
    drawUtil('b');
    drawSweep();
  }

  // ---- simulator configurations ----------------------------------------------------------------

  function presetByName(name) { return presets.find((p) => p.name === name); }

  // A field's help: the option's `disagg run --help` line from the catalogue (`option_help`), as
  // the tooltip of the field's label and control.
  function helpAttr(k) {
    const h = cat.option_help && cat.option_help[k];
    return h ? ` title="${esc(h)}"` : '';
  }

  function fieldHtml(id, f) {
    const fid = `${id}-${f.k}`;
    const help = helpAttr(f.k);
    if (f.optional) {
      const o = OPTIONAL[f.k];
      return `<div class="field" data-k="${f.k}"${help}><label for="${fid}">${esc(o.label)}</label>` +
        `<select id="${fid}" data-k="${f.k}" aria-describedby="${fid}-note"></select>` +
        `<span class="unsupported" id="${fid}-note"></span></div>`;
    }
    if (f.select) {
      return `<div class="field"${help}><label for="${fid}">${esc(f.label)}</label><select id="${fid}" data-k="${f.k}"></select></div>`;
    }
    const n = f.num;
    return `<div class="field"${help}><label for="${fid}">${esc(f.label)}</label>` +
      `<input id="${fid}" data-k="${f.k}" type="number" min="${n.min}" step="${n.step}" inputmode="decimal"></div>`;
  }

  function buildConfig(id) {
    const c = cfgs[id];
    const form = document.createElement('form');
    form.className = 'card config';
    form.id = `cfg-${id}`;
    form.setAttribute('autocomplete', 'off');
    form.setAttribute('novalidate', '');
    form.setAttribute('aria-labelledby', `cfg-${id}-h`);
    let body = '';
    for (const g of cat.page_groups) {
      body += `<div class="group-label" aria-hidden="true">${esc(g)}</div><div class="grid3" role="group" aria-label="${esc(g)}">`;
      for (const f of FIELDS) if ((opt(f.k) || {}).group === g) body += fieldHtml(id, f);
      body += '</div>';
    }
    const toggle = id === 'b'
      ? `<label class="toggle"><input type="checkbox" id="b-on" checked> compare</label>` : '';
    form.innerHTML = `
      <div class="config-head">
        <span class="badge badge-${id}" aria-hidden="true">${id.toUpperCase()}</span>
        <h3 id="cfg-${id}-h">Configuration ${id.toUpperCase()}</h3>${toggle}
      </div>
      <div class="config-body">
        <div class="preset-row">
          <div class="field"><label for="${id}-preset">Preset</label><select id="${id}-preset"></select></div>
          <button type="submit" class="secondary" id="${id}-run">Run</button>
        </div>
        <p class="about" id="${id}-about"></p>
        ${body}
        <p class="error" id="${id}-error" role="alert" hidden></p>
      </div>`;
    $('#configs').appendChild(form);

    const groups = [...new Set(presets.map((p) => p.group))];
    $(`#${id}-preset`).innerHTML = groups.map((g) => `<optgroup label="${esc(g)}">` +
      presets.filter((p) => p.group === g).map((p) => `<option value="${esc(p.name)}">${esc(p.name)}</option>`).join('') +
      '</optgroup>').join('');
    for (const f of FIELDS) {
      if (!f.k) continue;
      const el = $(`#${id}-${f.k}`);
      if (f.optional) {
        fillSelect(el, OPTIONAL[f.k].options || choices(f.k)());
      } else if (f.select) {
        fillSelect(el, f.select());
      }
      const ev = f.num ? 'input' : 'change';
      el.addEventListener(ev, () => onField(id, f, el));
    }
    $(`#${id}-preset`).addEventListener('change', (e) => loadPreset(id, e.target.value, true));
    form.addEventListener('submit', (e) => { e.preventDefault(); runNow(id); });
    if (id === 'b') {
      $('#b-on').addEventListener('change', (e) => {
        c.on = e.target.checked;
        applyOnOff();
        writeUrl();
        if (c.on) runNow('b'); else { renderResults(); drawCharts(); }
      });
    }
  }

  function applyOnOff() {
    $('#cfg-b').classList.toggle('off', !cfgs.b.on);
    document.body.classList.toggle('single', !cfgs.b.on);
  }

  function loadPreset(id, name, run) {
    const p = presetByName(name) || presetByName('link-ib-ndr') || presets[0];
    const c = cfgs[id];
    c.preset = p.name;
    c.sc = clone(p.scenario);
    c.retried = {};
    c.bad.clear();
    const form = $(`#cfg-${id}`);
    if (form) clearFieldErrors(form);
    syncConfig(id);
    writeUrl();
    if (run) runNow(id);
  }

  function syncConfig(id) {
    const c = cfgs[id];
    $(`#${id}-preset`).value = c.preset;
    const p = presetByName(c.preset);
    const modified = p && JSON.stringify(p.scenario) !== JSON.stringify(c.sc);
    $(`#${id}-about`).textContent = p ? `${p.about}${modified ? ' (modified)' : ''}` : '';
    for (const f of FIELDS) {
      if (!f.k) continue;
      const el = $(`#${id}-${f.k}`);
      if (f.optional) {
        // An option this engine does not have: disabled and hidden (it shows up once the engine has it).
        const ok = supported[f.k] !== false;
        el.disabled = !ok;
        el.closest('.field').hidden = !ok;
        $(`#${id}-${f.k}-note`).textContent = ok ? '' : 'not in this engine yet';
        const v = c.sc[f.k] ?? cat.scenario_defaults[f.k];
        if (v !== undefined && ok) {
          if (![...el.options].some((o) => o.value === v)) {
            el.insertAdjacentHTML('beforeend', `<option value="${esc(v)}">${esc(v)}</option>`);
          }
          el.value = v;
        }
        continue;
      }
      const v = f.get ? f.get(c.sc) : c.sc[f.k];
      if (f.num) {
        if (document.activeElement !== el) el.value = v === null || v === undefined ? '' : String(+(v * (f.scale || 1)).toPrecision(12));
      } else {
        el.value = v === null || v === undefined ? '' : String(v);
      }
    }
    $(`#${id}-kv_compress_at`).disabled = !c.sc.kv_compress;
  }

  let debounce = {};
  function onField(id, f, el) {
    const c = cfgs[id];
    let v;
    if (f.num && f.blank && el.value === '') {
      // An optional number left empty: unset (the token budget's default).
      v = null;
    } else if (f.num) {
      v = Number(el.value);
      if (el.value === '' || !Number.isFinite(v)) {
        // Nothing to run: say so next to the input and take the old numbers off.
        fieldError(el, `${f.label}: enter a number`);
        c.bad.add(f.k);
        clearTimeout(debounce[id]);
        c.seq++;
        c.err = 'invalid input';
        c.result = null;
        c.sweep = null;
        renderResults();
        drawCharts();
        setStatus();
        return;
      }
      if (f.scale) v /= f.scale;
    } else {
      v = el.value;
      if ((f.k === 'kv_compress' || f.k === 'speculative' || f.k === 'ced_replay_on') && v === '') v = null;
      if (f.bool) v = v === 'true';
    }
    fieldError(el, '');
    c.bad.delete(f.k);
    c.sc[f.k] = v;
    syncConfig(id);
    writeUrl();
    clearTimeout(debounce[id]);
    debounce[id] = setTimeout(() => runNow(id), f.num ? 250 : 0);
  }

  // ---- runs ---------------------------------------------------------------------------------------

  function runNow(id) {
    clearTimeout(debounce[id]);
    if (!cfgs[id].on || cfgs[id].bad.size) return;
    run(id);
  }

  function showError(id, msg) {
    const el = $(`#${id}-error`);
    el.textContent = msg || '';
    el.hidden = !msg;
  }

  function scenarioBody(c) {
    const body = clone(c.sc);
    for (const k of Object.keys(OPTIONAL)) if (supported[k] === false) delete body[k];
    return body;
  }

  async function run(id) {
    const c = cfgs[id];
    const seq = ++c.seq;
    setStatus();
    const body = { ...scenarioBody(c), latency_samples: 400, series: true };
    const t0 = performance.now();
    simBusy++;
    const r = await api('/api/run', body).finally(() => { simBusy--; });
    const rtt = performance.now() - t0;
    if (seq !== c.seq) return;
    if (r.status !== 200) {
      if (handleOptionalError(id, r)) return;
      c.err = r.body.error || `error ${r.status}`;
      // Next to the input it is about when there is one, else under the form.
      const input = r.body.field && $(`#${id}-${r.body.field}`);
      if (input) fieldError(input, c.err);
      showError(id, input ? '' : c.err);
      c.result = null;
      c.sweep = null;
      renderResults();
      drawCharts();
      setStatus();
      return;
    }
    c.err = null;
    showError(id, '');
    clearFieldErrors($(`#cfg-${id}`));
    c.result = r.body;
    const sim = /sim;dur=([\d.]+)/.exec(r.timing || '');
    c.timing = { rtt, sim: sim ? Number(sim[1]) : NaN, requests: body.requests };
    perf.runs.push({ id, requests: body.requests, rtt, sim: c.timing.sim });
    renderResults();
    drawCharts();
    setStatus();
    sweep(id, seq);
  }

  // 400 unknown field / 422 unknown value for an option the engine may not have: adapt and retry.
  function handleOptionalError(id, r) {
    const c = cfgs[id];
    const field = r.body.field;
    if (!field || !OPTIONAL[field]) return false;
    if (r.status === 400 && /unknown field/.test(r.body.error || '')) {
      supported[field] = false;
      for (const k of ['a', 'b']) { delete cfgs[k].sc[field]; syncConfig(k); }
      run(id);
      return true;
    }
    const valid = /valid: (.*)$/.exec(r.body.error || '');
    if (r.status === 422 && valid && !c.retried[field]) {
      c.retried[field] = true;
      const names = valid[1].split(',').map((s) => s.trim()).filter(Boolean);
      OPTIONAL[field].options = names.map((n) => [n, n]);
      for (const k of ['a', 'b']) {
        fillSelect($(`#${k}-${field}`), OPTIONAL[field].options);
        if (!names.includes(cfgs[k].sc[field])) delete cfgs[k].sc[field];
        syncConfig(k);
      }
      run(id);
      return true;
    }
    return false;
  }

  async function sweep(id, seq) {
    const c = cfgs[id];
    const rate = c.sc.rate;
    const rates = [0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2].map((k) => +(k * rate).toPrecision(6));
    const t0 = performance.now();
    simBusy++;
    const r = await api('/api/sweep', { ...scenarioBody(c), rates, compact: true }).finally(() => { simBusy--; });
    if (seq !== c.seq) return;
    perf.sweeps.push({ id, points: rates.length, rtt: performance.now() - t0 });
    c.sweep = r.status === 200 ? r.body : null;
    drawSweep();
  }

  function setStatus() {
    const parts = [];
    for (const id of ['a', 'b']) {
      const c = cfgs[id];
      if (!c.on || !c.timing || !c.result) continue;
      parts.push(`${id.toUpperCase()}: ${thousands(c.timing.requests)} requests simulated in ${fixed(c.timing.sim, 1)} ms`);
    }
    $('#sim-status').textContent = parts.join(' · ');
  }

  // What was simulated, said once (summary.simulated, docs/serving-model.md#simulated).
  function simulatedText(x) {
    const pools = x.pools.map((p) => `${p.role} ${p.instances} × ${p.devices_per_instance} ${p.device}`
      + (p.layout ? ` (TP${p.layout.replace('x', '×PP')})` : '')).join(', ');
    let t = `${x.model}${x.formats ? ` ${x.formats}` : ''}: ${pools}`;
    if (x.link) {
      t += `; link ${x.link.name}`;
      if (x.link.channels !== 1) t += `, ${x.link.channels} channels`;
      if (x.link.topology !== 'shared') t += `, ${x.link.topology} links`;
    }
    return t;
  }
  function workloadText(x) {
    const a = x.arrivals;
    const src = a.source === 'trace' ? `trace ${a.trace_file}, time scale ${a.time_scale}`
      : `${a.source}${a.workload ? ` '${a.workload}'` : ''} ${a.rate_rps} req/s`;
    const from = (f) => (f === 'workload' ? "the workload's" : f);
    const slo = x.slo.ttft_from === x.slo.tpot_from
      ? `TTFT ${x.slo.ttft_s} s, TPOT ${x.slo.tpot_s} s (${x.slo.ttft_from === 'default' ? 'defaults' : from(x.slo.ttft_from)})`
      : `TTFT ${x.slo.ttft_s} s (${from(x.slo.ttft_from)}), TPOT ${x.slo.tpot_s} s (${from(x.slo.tpot_from)})`;
    return `${src}: ${thousands(x.requests)} requests; SLO ${slo}`;
  }
  // The offered rate against the per-pool ceiling (summary.overload, docs/serving-model.md#overload).
  function overloadText(o) {
    const r2 = (x) => (x == null ? 'n/a' : `${fixed(x, 2)} req/s`);
    const cap = o.capacity_rps == null ? 'no bound' : `capacity ${r2(o.capacity_rps)} (${o.bottleneck} bound)`;
    const t = `offered ${r2(o.offered_rps)} · ${cap}`;
    return (o.overloaded ? 'overloaded: ' : '') + t + (o.queues_growing ? ' · queues growing' : '');
  }

  const ROWS = [
    ['simulated', 'Simulated', (s) => simulatedText(s.simulated)],
    ['workload', 'Workload', (s) => workloadText(s.simulated)],
    ['overload', 'Load', (s) => overloadText(s.overload), (s) => s.overload.overloaded, true],
    ['ttft_p50', 'TTFT p50', (s) => lat(s.ttft_s.p50)],
    ['ttft_p99', 'TTFT p99', (s) => lat(s.ttft_s.p99), (s, sc) => s.ttft_s.p99 > sc.ttft_slo],
    ['tpot_p50', 'TPOT p50', (s) => lat(s.tpot_s.p50)],
    ['tpot_p99', 'TPOT p99', (s) => lat(s.tpot_s.p99), (s, sc) => s.tpot_s.p99 > sc.tpot_slo],
    ['handoff_p50', 'Hand-off p50', (s) => lat(s.handoff_s.p50)],
    ['handoff_p99', 'Hand-off p99', (s) => lat(s.handoff_s.p99)],
    ['link_busy', 'Link busy', (s) => pct(s.link_busy), (s) => s.link_busy > 0.9],
    ['slo_attainment', 'SLO attainment', (s) => pct(s.slo_attainment), (s) => s.slo_attainment < 0.9, true],
    ['goodput', 'Goodput', (s) => rps(s.goodput_rps)],
    ['j_per_token', 'Energy per token', (s) => `${fixed(s.j_per_token, 3)} J`],
    ['hotspot', 'Hot-spot', (s) => (s.hotspot.stage ? `${s.hotspot.stage.replace('_', ' ')} · ${s.hotspot.resource}` : 'n/a')],
  ];

  function renderResults() {
    const tb = $('#results-body');
    for (const id of ['a', 'b']) {
      const p = presetByName(cfgs[id].preset);
      $(`#name-${id}`).textContent = p ? p.name + (JSON.stringify(p.scenario) !== JSON.stringify(cfgs[id].sc) ? ' *' : '') : '';
    }
    tb.innerHTML = ROWS.map(([key, label, f, bad, key2]) => {
      const cells = ['a', 'b'].map((id) => {
        const c = cfgs[id];
        const s = c.result?.summary;
        let v = '–';
        let klass = 'num';
        if (s) {
          v = f(s);
          if (bad) klass += bad(s, c.result.scenario) ? ' cell-bad' : key2 ? ' cell-good' : '';
        } else if (c.err) {
          v = 'error';
        }
        if (['hotspot', 'simulated', 'workload', 'overload'].includes(key)) klass += ' wrap';
        return `<td class="${klass} col-${id}" id="r-${id}-${key}">${esc(v)}</td>`;
      });
      return `<tr><th scope="row">${esc(label)}</th>${cells.join('')}</tr>`;
    }).join('');
    renderScheduler();
    renderLevers();
    renderEngines();
  }

  // The scheduler block of a scheduled run (summary.scheduler, levers-scheduling.md §11.1): one
  // row per figure that either side has; the card is hidden when neither run has the levers on.
  const SCHED_ROWS = [
    ['batch', 'Batch policy', (b) => `${b.batch_policy}, budget ${thousands(b.token_budget)} tokens`],
    ['kv', 'KV policy, capacity', (b) => `${b.kv_policy}, ${thousands(b.kv_capacity_units)} units × ${thousands(b.kv_unit_tokens)} tokens`],
    ['mean_running', 'Mean running', (b) => fixed(b.mean_running, 1)],
    ['kv_holding', 'KV holding share', (b) => pct(b.kv_token_frac)],
    ['computed', 'Prefill tokens computed', (b) => thousands(b.computed_prefill_tokens)],
    ['delay', 'Scheduling delay p50', (b) => lat(b.sched_delay_p50_s)],
    ['norm', 'Normalised latency', (b) => (b.norm_latency_s_per_token == null ? 'n/a' : `${fixed(1e3 * b.norm_latency_s_per_token, 2)} ms/token`)],
    ['preemptions', 'Preemptions', (b) => b.preemptions != null && `${thousands(b.preemptions)} (${b.preemption})`],
    ['recompute', 'Tokens recomputed', (b) => b.recompute_tokens != null && thousands(b.recompute_tokens)],
    ['swap', 'Swapped out / in', (b) => b.swap && `${fixed(b.swap.out_GB, 2)} / ${fixed(b.swap.in_GB, 2)} GB`],
    ['swap_cost', 'Swap time, energy', (b) => b.swap && `${fixed(b.swap.seconds, 3)} s, ${fixed(b.swap.J, 1)} J`],
    ['hit_rate', 'Prefix hit rate', (b) => b.prefix_cache && `${pct(b.prefix_cache.hit_rate)} (${thousands(b.prefix_cache.hit_tokens)} of ${thousands(b.prefix_cache.prompt_tokens)} tokens)`],
    ['evicted', 'Tokens evicted', (b) => b.prefix_cache && thousands(b.prefix_cache.evicted_tokens)],
    ['cached', 'Tokens cached at the end', (b) => b.prefix_cache && thousands(b.prefix_cache.cached_tokens_end)],
    ['handoff_hit', 'Hand-off prefix held by decode', (b) => b.prefix_handoff && `${pct(b.prefix_handoff.hit_rate)} (${thousands(b.prefix_handoff.hit_tokens)} of ${thousands(b.prefix_handoff.prompt_tokens)} tokens, ${thousands(b.prefix_handoff.handoffs_hit)} of ${thousands(b.prefix_handoff.handoffs)} hand-offs)`],
    ['decode_router', 'Decode router', (b) => b.prefix_handoff && b.prefix_handoff.decode_router],
    ['tokens_per_verify', 'Tokens per verify', (b) => b.speculative && `${fixed(b.speculative.tokens_per_verify, 3)} (closed form ${fixed(b.speculative.closed_form, 3)})`],
    ['draft', 'Draft share of busy time', (b) => b.speculative && pct(b.speculative.draft_time_frac)],
  ];

  function renderScheduler() {
    const blocks = ['a', 'b'].map((id) => (cfgs[id].on && cfgs[id].result?.summary?.scheduler) || null);
    const card = $('#sched-card');
    card.hidden = !blocks[0] && !blocks[1];
    if (card.hidden) { $('#sched-body').innerHTML = ''; return; }
    $('#sched-body').innerHTML = SCHED_ROWS.map(([key, label, f]) => {
      const vals = blocks.map((b) => (b ? f(b) : false));
      if (vals.every((v) => v === false || v === undefined || v === null)) return '';
      const cells = ['a', 'b'].map((id, k) => {
        const v = vals[k] === false || vals[k] == null ? '–' : vals[k];
        return `<td class="num wrap col-${id}" id="s-${id}-${key}">${esc(v)}</td>`;
      });
      return `<tr><th scope="row">${esc(label)}</th>${cells.join('')}</tr>`;
    }).join('');
  }

  // The cost levers' blocks of a run (summary.parallel, one per pool, and summary.formats;
  // levers-cost.md §5, §6): one row per pool layout and one for the formats that either side
  // has; the card is hidden when neither run sets a layout or a format.
  const LAYOUT_ROWS = [['prefill', 'Prefill layout'], ['decode', 'Decode layout'], ['colocated', 'Layout']];
  function layoutText(p) {
    const mb = p.pp > 1 && p.microbatches != null ? `, ${p.microbatches} micro-batches` : '';
    const link = String(p.link).replace(' (one direction)', '');
    return `tp ${p.tp} × pp ${p.pp} × ep ${p.ep}${mb} · ${pct(p.comm_frac)} of busy time on ${link}`;
  }
  function formatsText(f) {
    return `weights ${f.weights}, KV ${f.kv}, compute ${f.compute} · ${fixed(f.weight_bytes, 3)} / ${fixed(f.kv_bytes, 3)} bytes a weight / KV value`;
  }
  function renderLevers() {
    const sums = ['a', 'b'].map((id) => (cfgs[id].on && cfgs[id].result?.summary) || null);
    const card = $('#levers-card');
    card.hidden = !sums.some((s) => s && (s.parallel || s.formats));
    if (card.hidden) { $('#levers-body').innerHTML = ''; return; }
    const rows = LAYOUT_ROWS.map(([role, label]) => [role, label,
      (s) => { const p = (s.parallel || []).find((b) => b.role === role); return p ? layoutText(p) : null; }]);
    rows.push(['formats', 'Formats', (s) => (s.formats ? formatsText(s.formats) : null)]);
    $('#levers-body').innerHTML = rows.map(([key, label, f]) => {
      const vals = sums.map((s) => (s ? f(s) : null));
      if (vals.every((v) => v === null)) return '';
      const cells = ['a', 'b'].map((id, k) => `<td class="num wrap col-${id}" id="p-${id}-${key}">${esc(vals[k] ?? '–')}</td>`);
      return `<tr><th scope="row">${esc(label)}</th>${cells.join('')}</tr>`;
    }).join('');
  }

  // The optical engines' and the area/cost blocks of a run (summary.optical, one per instance,
  // and summary.ppa; levers-cost.md §10.3, §11): one row per instance and one per PPA figure that
  // either side has; the card is hidden when neither run has an engine device or --ppa.
  function opticalText(o) {
    return `${pct(o.optical_bound_frac)} of busy time optical-bound · ${o.optical_flops.toExponential(3)} FLOPs · conversions ${fixed(o.conversion_j, 1)} J, static ${fixed(o.static_j, 1)} J`;
  }
  const PPA_ROWS = [
    ['ppa-mm2', 'Silicon area', (p) => (p.total_mm2 == null ? null : `${fixed(p.total_mm2, 0)} mm²`)],
    ['ppa-usd', 'Silicon cost', (p) => (p.total_usd == null ? null : `$${fixed(p.total_usd, 0)}`)],
    ['ppa-w', 'Output tokens per J', (p) => `${fixed(p.perf_per_W, 3)} tok/J`],
    ['ppa-mm2-perf', 'Output tok/s per mm²', (p) => (p.perf_per_mm2 == null ? null : fixed(p.perf_per_mm2, 4))],
    ['ppa-kusd', 'Output tok/s per $1k', (p) => (p.perf_per_kusd == null ? null : fixed(p.perf_per_kusd, 3))],
  ];
  function renderEngines() {
    const sums = ['a', 'b'].map((id) => (cfgs[id].on && cfgs[id].result?.summary) || null);
    const card = $('#engines-card');
    card.hidden = !sums.some((s) => s && (s.optical || s.ppa));
    if (card.hidden) { $('#engines-body').innerHTML = ''; return; }
    const names = [];
    for (const s of sums) for (const o of (s && s.optical) || []) if (!names.includes(o.name)) names.push(o.name);
    const rows = names.map((n) => [`opt-${n}`, `Optical engine, ${n}`,
      (s) => { const o = (s.optical || []).find((b) => b.name === n); return o ? opticalText(o) : null; }]);
    for (const [key, label, f] of PPA_ROWS) rows.push([key, label, (s) => (s.ppa ? f(s.ppa) : null)]);
    $('#engines-body').innerHTML = rows.map(([key, label, f]) => {
      const vals = sums.map((s) => (s ? f(s) : null));
      if (vals.every((v) => v === null)) return '';
      const cells = ['a', 'b'].map((id, k) => `<td class="num wrap col-${id}" id="e-${id}-${key}">${esc(vals[k] ?? '–')}</td>`);
      return `<tr><th scope="row">${esc(label)}</th>${cells.join('')}</tr>`;
    }).join('');
  }

  // ---- page state in the URL --------------------------------------------------------------------

  function encodeVal(v) { return v === null ? 'null' : String(v); }
  function decodeVal(s, like) {
    if (s === 'null') return null;
    if (typeof like === 'number') return Number(s);
    if (typeof like === 'boolean') return s === 'true';
    return s;
  }

  let urlTimer = null;
  function writeUrl() {
    clearTimeout(urlTimer);
    urlTimer = setTimeout(() => {
      const q = new URLSearchParams();
      for (const [k, short] of Object.entries(CALC_URL)) {
        if (calc[k] !== CALC_DEFAULT[k]) q.set(short, String(calc[k]));
      }
      for (const id of ['a', 'b']) {
        const c = cfgs[id];
        if (id === 'b' && !c.on) { q.set('b', 'off'); continue; }
        q.set(id, c.preset);
        const base = presetByName(c.preset)?.scenario || {};
        for (const [k, v] of Object.entries(c.sc)) {
          if (JSON.stringify(v) !== JSON.stringify(base[k])) q.set(`${id}.${k}`, encodeVal(v));
        }
      }
      const metric = $('#sweep-metric').value;
      if (metric !== 'tpot_p99_s') q.set('sweep', metric);
      const s = q.toString();
      history.replaceState(null, '', `${location.pathname}${s ? `?${s}` : ''}${location.hash}`);
    }, 60);
  }

  function readUrl() {
    const q = new URLSearchParams(location.search);
    for (const [k, short] of Object.entries(CALC_URL)) {
      if (!q.has(short)) continue;
      const v = q.get(short);
      calc[k] = typeof CALC_DEFAULT[k] === 'number' ? Number(v) : v;
    }
    for (const id of ['a', 'b']) {
      const c = cfgs[id];
      const name = q.get(id);
      if (id === 'b' && name === 'off') c.on = false;
      if (name && name !== 'off' && presetByName(name)) c.preset = name;
      c.sc = clone(presetByName(c.preset).scenario);
      for (const [key, v] of q.entries()) {
        if (!key.startsWith(`${id}.`)) continue;
        const k = key.slice(2);
        const like = c.sc[k] ?? cat.scenario_defaults[k];
        // A number field whose default is unset (null) still reads back as a number.
        const num = FIELDS.some((f) => f.k === k && f.num);
        c.sc[k] = decodeVal(v, num && like == null ? 0 : like);
      }
    }
    const metric = q.get('sweep');
    if (metric && SWEEP[metric]) $('#sweep-metric').value = metric;
  }

  // ---- start ------------------------------------------------------------------------------------

  async function main() {
    const [c, p] = await Promise.all([api('/api/catalogue'), api('/api/presets')]);
    if (c.status !== 200 || p.status !== 200) {
      $('#calc-error').textContent = 'The disagg server cannot be reached.';
      $('#calc-error').hidden = false;
      return;
    }
    cat = c.body;
    presets = p.body;
    for (const k of Object.keys(OPTIONAL)) supported[k] = opt(k) !== undefined;
    buildCalc();
    buildConfig('a');
    buildConfig('b');
    readUrl();
    syncCalcControls();
    for (const id of ['a', 'b']) syncConfig(id);
    $('#b-on').checked = cfgs.b.on;
    applyOnOff();
    $('#sweep-metric').addEventListener('change', () => { drawSweep(); writeUrl(); });
    $('#ranks').addEventListener('toggle', sendRanks);
    for (const id of ['#ranks-decode-tp', '#ranks-nics']) $(id).addEventListener('change', sendRanks);
    $('#api-example').textContent = `curl -s ${location.origin}/api/handoff -H 'Content-Type: application/json' -d '{"prompt_tokens": 2048, "link": "eth-25g", "send": "layerwise"}'`;
    renderResults();
    sendCalc();
    await Promise.all(['a', 'b'].filter((id) => cfgs[id].on).map((id) => run(id)));
    perf.ready = true;
    perf.readyAt = performance.now();
    let pending = false;
    const ro = new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; drawTimeline(); drawRanks(); if (cat) drawCharts(); });
    });
    for (const el of document.querySelectorAll('.chart-box')) ro.observe(el);
  }

  main().catch((e) => {
    perf.errors.push(String(e && e.stack || e));
    const el = $('#calc-error');
    el.textContent = `Something went wrong: ${e && e.message}`;
    el.hidden = false;
  });
})();
