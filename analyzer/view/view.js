/* wstrace view: draws the data embedded in the page (analyzer/view/data.c writes it).
 * Level of detail: while the window holds more allocations than DETAIL_MAX the page draws the
 * aggregated bands (live bytes per time bin, occupancy per time x address cell); below that it
 * inflates the chunks of allocations the window needs and draws every block. */
'use strict';
(function () {
  /* The page's state can be given after '#' in its address, e.g. '#run=3&planned=1&stack=node':
   * device, shape, run (indices as in the selectors), stack, colour, planned (0/1), and detail
   * (at most this many allocations are drawn one by one; default 250000). */
  const HASH = new Map(location.hash.replace(/^#/, '').split('&').filter(Boolean).map((kv) => kv.split('=')));
  const hashNumber = (key, fallback) => (HASH.has(key) && /^\d+$/.test(HASH.get(key)) ? Number(HASH.get(key)) : fallback);
  const DETAIL_MAX = hashNumber('detail', 250000);
  const D = JSON.parse(document.getElementById('ws-data').textContent);
  /* workspace, activation, persistent, unattributed, and pool: memory that holds an NVTX heap */
  const CLASS_COLOURS = ['#f28e2b', '#4e79a7', '#59a14f', '#9d9d9d', '#d8c7a3'];
  const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7',
    '#9c755f', '#bab0ac', '#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#17becf'];
  const OTHER_COLOUR = '#c9ced4', NONE_COLOUR = '#e6e8eb';
  const $ = (id) => document.getElementById(id);

  /* ---- formatting ---- */
  function human(bytes) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let v = bytes, u = 0;
    while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (u === 0 ? String(v) : v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)) + ' ' + units[u];
  }
  function grouped(n) { return Math.round(n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  function exact(bytes) { return bytes < 1024 ? human(bytes) : human(bytes) + ' (' + grouped(bytes) + ' B)'; }
  function duration(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e10 ? 2 : 3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e7 ? 2 : 3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e4 ? 2 : 3) + ' µs';
    return Math.round(ns) + ' ns';
  }
  function hexAddress(dev, y) {
    const segs = dev.segments;
    let lo = 0, hi = segs.length;
    while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (segs[mid][2] <= y) lo = mid; else hi = mid; }
    if (!segs.length) return '?';
    return '0x' + (BigInt(segs[lo][0]) + BigInt(Math.round(y - segs[lo][2]))).toString(16);
  }
  /* A y axis without the empty stretches between the given [lo, hi) intervals. */
  function compactor(intervals) {
    const iv = intervals.slice().sort((a, b) => a[0] - b[0]), segs = [];
    let used = 0;
    for (const [lo, hi] of iv) {
      const last = segs[segs.length - 1];
      if (last && lo <= last[1]) last[1] = Math.max(last[1], hi);
      else segs.push([lo, hi]);
    }
    for (const g of segs) used += g[1] - g[0];
    const gap = used / 50, base = [];
    let y = 0;
    segs.forEach((g, i) => { if (i) y += gap; base.push(y); y += g[1] - g[0]; });
    return {
      span: Math.max(y, 1),
      map(v) {
        let lo = 0, hi = segs.length;
        while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (segs[mid][0] <= v) lo = mid; else hi = mid; }
        return segs.length ? base[lo] + (v - segs[lo][0]) : v;
      },
    };
  }
  const nodeName = (i) => (i >= 0 && i < D.nodes.length ? D.nodes[i] : '(no node)');
  const layerName = (i) => (i >= 0 && i < D.layers.length ? D.layers[i] : '(no layer)');
  const nodeColour = (i) => (i < 0 ? NONE_COLOUR : PALETTE[i % PALETTE.length]);
  function runLabel(r) {
    const run = D.runs[r];
    if (!run) return 'outside every run';
    return 'run ' + run[0] + (run[1] >= 0 ? ' · ' + D.shapes[run[1]] : '');
  }

  /* ---- state ---- */
  const S = {
    dev: 0, lo: 0, hi: Math.max(D.span, 1), stack: 'class', colour: 'class', plannedOnly: false,
    shape: -1, run: -1, node: -1, hoverOrdinal: -1,
  };
  if (D.devices.length) { /* the device with the highest peak first */
    let best = 0;
    D.devices.forEach((d, i) => { if (d.peak > D.devices[best].peak) best = i; });
    S.dev = best;
  }

  /* ---- detail chunks: base64 of zlib data, inflated by the browser ---- */
  const B64 = new Uint8Array(128);
  'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, i) => { B64[c.charCodeAt(0)] = i; });
  function base64Bytes(text) {
    const clean = text.trim();
    let n = clean.length;
    while (n > 0 && clean[n - 1] === '=') n--;
    const out = new Uint8Array(Math.floor(n * 3 / 4));
    let o = 0;
    for (let i = 0; i < n; i += 4) {
      const a = B64[clean.charCodeAt(i)], b = B64[clean.charCodeAt(i + 1)];
      const c = i + 2 < n ? B64[clean.charCodeAt(i + 2)] : 0, d = i + 3 < n ? B64[clean.charCodeAt(i + 3)] : 0;
      const v = (a << 18) | (b << 12) | (c << 6) | d;
      out[o++] = (v >> 16) & 255;
      if (i + 2 < n) out[o++] = (v >> 8) & 255;
      if (i + 3 < n) out[o++] = v & 255;
    }
    return out;
  }
  async function inflate(text) {
    const stream = new Blob([base64Bytes(text)]).stream().pipeThrough(new DecompressionStream('deflate'));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  /* One chunk's allocations, in the order and encoding of encode_chunk() in data.c. */
  function decodeRecords(u8, n) {
    const r = {
      n, alloc: new Float64Array(n), free: new Float64Array(n), y: new Float64Array(n), bytes: new Float64Array(n),
      node: new Int32Array(n), cls: new Uint8Array(n), run: new Int32Array(n), thread: new Int32Array(n),
      api: new Int32Array(n), dev: new Int32Array(n), id: new Float64Array(n), seq: new Int32Array(n),
      layer: new Int32Array(n), region: new Uint8Array(n),
    };
    let p = 0;
    const rd = () => { let x = 0, m = 1, b; do { b = u8[p++]; x += (b & 127) * m; m *= 128; } while (b & 128); return x; };
    const zz = (x) => (x % 2 ? -(x + 1) / 2 : x / 2);
    let t = 0, y = 0, id = 0;
    for (let i = 0; i < n; i++) {
      t += rd(); r.alloc[i] = t;
      const f = rd(); r.free[i] = f === 0 ? -1 : t + f - 1;
      y += zz(rd()); r.y[i] = y;
      r.bytes[i] = rd(); r.node[i] = rd() - 1; r.cls[i] = rd(); r.run[i] = rd() - 1; r.thread[i] = rd() - 1;
      r.api[i] = rd(); r.dev[i] = rd(); id += zz(rd()); r.id[i] = id; r.seq[i] = rd() - 1; r.layer[i] = rd() - 1;
      r.region[i] = rd();
    }
    return r;
  }
  const chunks = new Map(); /* element id -> Promise of records */
  function loadChunk(el, n) {
    if (!chunks.has(el)) {
      const node = document.getElementById(el);
      chunks.set(el, n === 0 || !node ? Promise.resolve(decodeRecords(new Uint8Array(0), 0))
        : inflate(node.textContent).then((u8) => decodeRecords(u8, n)));
    }
    return chunks.get(el);
  }
  const ready = new Map(); /* element id -> records, once inflated */
  function windowChunks(lo, hi) {
    return D.detail.chunks.filter((c) => c.hi > lo && c.lo <= hi);
  }
  function windowCount(lo, hi) {
    return windowChunks(lo, hi).reduce((s, c) => s + c.n, 0) + D.detail.spanning.n;
  }
  function detailMode() { return !D.lod || windowCount(S.lo, S.hi) <= DETAIL_MAX; }
  /* The records the window needs, or null while some are still being inflated. */
  function windowRecords() {
    const want = [D.detail.spanning].concat(windowChunks(S.lo, S.hi));
    const got = [];
    let missing = false;
    for (const c of want) {
      if (ready.has(c.el)) { got.push(ready.get(c.el)); continue; }
      missing = true;
      loadChunk(c.el, c.n).then((r) => { ready.set(c.el, r); schedule(); });
    }
    return missing ? null : got;
  }

  /* ---- canvases ---- */
  function setupCanvas(canvas) {
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(200, canvas.clientWidth), h = canvas.height / (canvas.dataset.ratio || 1);
    canvas.dataset.ratio = ratio;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(h * ratio);
    canvas.style.height = h + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return { ctx, w, h };
  }
  const M = { left: 78, right: 14, top: 10, bottom: 26 };
  const xOf = (t, w) => M.left + (t - S.lo) / (S.hi - S.lo) * (w - M.left - M.right);
  const tOf = (x, w) => S.lo + (x - M.left) / (w - M.left - M.right) * (S.hi - S.lo);
  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }
  function timeAxis(ctx, w, h) {
    const step = niceStep((S.hi - S.lo) / Math.max(2, (w - M.left - M.right) / 110));
    ctx.fillStyle = '#5f6b76'; ctx.strokeStyle = '#eef0f2'; ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    for (let t = Math.ceil(S.lo / step) * step; t <= S.hi; t += step) {
      const x = xOf(t, w);
      ctx.beginPath(); ctx.moveTo(x, M.top); ctx.lineTo(x, h - M.bottom); ctx.stroke();
      ctx.fillText(duration(t), x, h - M.bottom + 5);
    }
  }
  function bytesAxis(ctx, w, h, top, label) {
    const step = niceStep(top / 5);
    ctx.fillStyle = '#5f6b76'; ctx.strokeStyle = '#eef0f2'; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (let v = 0; v <= top * 1.0001; v += step) {
      const y = h - M.bottom - v / top * (h - M.top - M.bottom);
      ctx.beginPath(); ctx.moveTo(M.left, y); ctx.lineTo(w - M.right, y); ctx.stroke();
      ctx.fillText(label(v), M.left - 6, y);
    }
  }

  /* ---- live bytes: per pixel column, the composition at its highest moment ---- */
  function bandsOf() {
    if (S.stack === 'class') return D.classes.map((c, i) => ({ name: c, colour: CLASS_COLOURS[i] }));
    const lod = D.lod, top = lod ? (S.stack === 'node' ? lod.top_nodes : lod.top_layers) : topFromDetail();
    const names = top.map((i) => ({ name: S.stack === 'node' ? nodeName(i) : layerName(i), colour: PALETTE[top.indexOf(i) % PALETTE.length], index: i }));
    names.push({ name: S.stack === 'node' ? 'other nodes' : 'other layers', colour: OTHER_COLOUR });
    names.push({ name: S.stack === 'node' ? '(no node)' : '(no layer)', colour: NONE_COLOUR });
    return names;
  }
  /* Without bands (a small trace) the stacked names are the 12 (nodes) or 24 (layers) largest
   * peaks over the whole trace, as data.c chooses them for the bands. */
  let detailTop = null;
  function topFromDetail() {
    const key = S.stack + S.dev;
    if (detailTop && detailTop.key === key) return detailTop.top;
    const recs = windowRecordsAll();
    if (!recs) return [];
    const ev = [];
    for (const r of recs) for (let i = 0; i < r.n; i++) {
      const k = S.stack === 'node' ? r.node[i] : r.layer[i];
      if (k < 0 || r.region[i]) continue;
      ev.push([r.alloc[i], 0, k, r.bytes[i]]);
      if (r.free[i] >= 0) ev.push([r.free[i], 1, k, -r.bytes[i]]);
    }
    ev.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const live = new Map(), peak = new Map();
    for (const e of ev) { const v = (live.get(e[2]) || 0) + e[3]; live.set(e[2], v); if (v > (peak.get(e[2]) || 0)) peak.set(e[2], v); }
    const top = Array.from(peak.keys()).sort((a, b) => peak.get(b) - peak.get(a) || a - b).slice(0, S.stack === 'node' ? 12 : 24);
    detailTop = { key, top };
    return top;
  }
  function windowRecordsAll() {
    if (D.lod) return null;
    const all = [D.detail.spanning].concat(D.detail.chunks);
    if (all.some((c) => !ready.has(c.el))) return null;
    return all.map((c) => ready.get(c.el));
  }

  /* columns[x] = {total, cls: [4], stack: [bands]} from the allocations of the window */
  function columnsFromDetail(recs, w, bands) {
    const cols = Math.max(1, Math.floor(w - M.left - M.right));
    const nb = bands.length, bandOf = new Map();
    if (S.stack !== 'class') bands.forEach((b, i) => { if (b.index !== undefined) bandOf.set(b.index, i); });
    const out = new Array(cols), state = { total: 0, cls: D.classes.map(() => 0), stack: new Float64Array(nb) };
    const ev = [];
    const band = (r, i) => {
      if (S.stack === 'class') return r.cls[i];
      const k = S.stack === 'node' ? r.node[i] : r.layer[i];
      return k < 0 ? nb - 1 : bandOf.has(k) ? bandOf.get(k) : nb - 2;
    };
    const add = (r, i, sign) => {
      const b = r.bytes[i] * sign;
      state.total += b; state.cls[r.cls[i]] += b; state.stack[band(r, i)] += b;
    };
    for (const r of recs) for (let i = 0; i < r.n; i++) {
      if (r.dev[i] !== S.dev || r.region[i]) continue; /* a region lies in memory counted already */
      const end = r.free[i] < 0 ? Infinity : r.free[i];
      if (end <= S.lo || r.alloc[i] > S.hi) continue;
      if (r.alloc[i] <= S.lo) add(r, i, 1); else ev.push([r.alloc[i], 0, r, i]);
      if (end !== Infinity && end <= S.hi) ev.push([end, 1, r, i]);
    }
    ev.sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2].id[a[3]] - b[2].id[b[3]]);
    const snap = () => ({ total: state.total, cls: state.cls.slice(), stack: Array.from(state.stack) });
    let k = 0;
    for (let c = 0; c < cols; c++) {
      const tEnd = S.lo + (c + 1) / cols * (S.hi - S.lo);
      let best = snap();
      while (k < ev.length && ev[k][0] < tEnd) {
        add(ev[k][2], ev[k][3], ev[k][1] ? -1 : 1);
        k++;
        if (state.total > best.total) best = snap();
      }
      out[c] = best;
    }
    return out;
  }
  function columnsFromBands(w, bands) {
    const lod = D.lod, dev = lod.devices[S.dev], cols = Math.max(1, Math.floor(w - M.left - M.right));
    const out = new Array(cols), binNs = (D.span + 1) / lod.bins; /* as bin_of() in data.c */
    for (let c = 0; c < cols; c++) {
      const t0 = S.lo + c / cols * (S.hi - S.lo), t1 = S.lo + (c + 1) / cols * (S.hi - S.lo);
      let b0 = Math.max(0, Math.min(lod.bins - 1, Math.floor(t0 / binNs)));
      const b1 = Math.max(b0, Math.min(lod.bins - 1, Math.floor(t1 / binNs)));
      let best = b0;
      for (let b = b0; b <= b1; b++) if (dev.total[b] > dev.total[best]) best = b;
      const series = S.stack === 'class' ? dev.class : S.stack === 'node' ? dev.node : dev.layer;
      out[c] = { total: dev.total[best], cls: dev.class.map((s) => s[best]), stack: series.slice(0, bands.length).map((s) => s[best]) };
    }
    return out;
  }

  let liveColumns = null;
  function drawLive() {
    const canvas = $('live'), { ctx, w, h } = setupCanvas(canvas);
    ctx.clearRect(0, 0, w, h);
    const dev = D.devices[S.dev];
    if (!dev) { ctx.fillStyle = '#5f6b76'; ctx.fillText('no device allocations in this trace', M.left, 30); return true; }
    const bands = bandsOf();
    let cols;
    if (detailMode()) {
      const recs = windowRecords();
      if (!recs) { if (D.lod) cols = columnsFromBands(w, bands); else return false; }
      else cols = columnsFromDetail(recs, w, bands);
    } else cols = columnsFromBands(w, bands);
    liveColumns = cols;
    const visible = (c) => (S.plannedOnly ? c.cls[0] + c.cls[1] : c.total);
    let top = 1;
    for (const c of cols) top = Math.max(top, visible(c));
    const plans = planLines();
    for (const p of plans) top = Math.max(top, p.planned, p.bound);
    top *= 1.08;
    const yOf = (v) => h - M.bottom - v / top * (h - M.top - M.bottom);
    bytesAxis(ctx, w, h, top, human);
    timeAxis(ctx, w, h);
    const order = S.stack === 'class' ? [2, 3, 4, 1, 0].filter((c) => c < D.classes.length) : bands.map((_, i) => i);
    for (let x = 0; x < cols.length; x++) {
      const c = cols[x];
      let base = 0;
      for (const b of order) {
        if (S.stack === 'class' && S.plannedOnly && b >= 2) continue;
        const v = S.stack === 'class' ? c.cls[b] : c.stack[b];
        if (v <= 0) continue;
        ctx.fillStyle = bands[b].colour;
        ctx.fillRect(M.left + x, yOf(base + v), 1.02, yOf(base) - yOf(base + v));
        base += v;
      }
    }
    /* the plans' bounds over each run of a planned shape key, above what the plan leaves out */
    ctx.setLineDash([6, 4]); ctx.lineWidth = 1.4;
    for (const p of plans) {
      for (const [value, colour] of [[p.bound, '#d62728'], [p.planned, '#222']]) {
        ctx.strokeStyle = colour; ctx.beginPath();
        let started = false;
        const x0 = Math.max(M.left, xOf(p.start, w)), x1 = Math.min(w - M.right, xOf(p.end, w));
        for (let x = Math.floor(x0); x <= x1; x++) {
          const c = cols[Math.min(cols.length - 1, Math.max(0, x - M.left))];
          const outside = S.plannedOnly ? 0 : c.cls.slice(2).reduce((a, b) => a + b, 0);
          const y = yOf(outside + value);
          if (!started) { ctx.moveTo(x, y); started = true; } else ctx.lineTo(x, y);
        }
        ctx.stroke();
      }
    }
    ctx.setLineDash([]);
    /* the device's peak */
    if (dev.peak_ns >= S.lo && dev.peak_ns <= S.hi && !S.plannedOnly) {
      const x = xOf(dev.peak_ns, w), y = yOf(dev.peak);
      ctx.fillStyle = '#111'; ctx.beginPath(); ctx.arc(x, y, 3, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.strokeStyle = '#9aa5b1'; ctx.strokeRect(M.left, M.top, w - M.left - M.right, h - M.top - M.bottom);
    const legend = bands.map((b, i) => ({ b, i })).filter(({ i }) => !(S.stack === 'class' && S.plannedOnly && i >= 2));
    $('live-legend').innerHTML = '';
    for (const { b } of legend) addLegend($('live-legend'), b.colour, b.name, b.index);
    if (plans.length) {
      addLegend($('live-legend'), '#d62728', 'load bound', undefined, true);
      addLegend($('live-legend'), '#222', 'planned peak', undefined, true);
    }
    return true;
  }
  function addLegend(box, colour, name, node, line) {
    const item = document.createElement('span');
    item.className = 'item';
    const sw = document.createElement('span');
    sw.className = line ? 'line' : 'swatch';
    if (line) sw.style.borderColor = colour; else sw.style.background = colour;
    item.appendChild(sw);
    item.appendChild(document.createTextNode(name));
    if (node !== undefined && S.stack === 'node') item.addEventListener('click', () => selectNode(node));
    box.appendChild(item);
  }
  /* Every run of a shape key that has a plan: its span and the plan's bounds. */
  function planLines() {
    const out = [];
    for (const run of D.runs) {
      const plan = D.plans.find((p) => p.shape >= 0 && p.shape === run[1]) || D.plans.find((p) => p.run === run[0]);
      if (!plan || (S.shape >= 0 && plan.shape !== S.shape)) continue;
      const end = run[3] < 0 ? D.span : run[3];
      if (end < S.lo || run[2] > S.hi) continue;
      out.push({ start: run[2], end, bound: plan.load_bound, planned: plan.planned_peak });
    }
    return out;
  }

  /* ---- blocks in time x address ---- */
  let drawnBlocks = [];
  function blockColour(r, i) { return S.colour === 'class' ? CLASS_COLOURS[r.cls[i]] : nodeColour(r.node[i]); }
  function drawBlocks() {
    const canvas = $('blocks'), { ctx, w, h } = setupCanvas(canvas);
    ctx.clearRect(0, 0, w, h);
    drawnBlocks = [];
    const dev = D.devices[S.dev];
    if (!dev) return true;
    const yOf = (y) => h - M.bottom - y / dev.yspan * (h - M.top - M.bottom);
    timeAxis(ctx, w, h);
    ctx.fillStyle = '#5f6b76'; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (const seg of S.plannedOnly && detailMode() ? [] : dev.segments) { /* each stretch of addresses: its start */
      const y = yOf(seg[2]);
      ctx.fillText(seg[0].length > 12 ? seg[0].slice(0, 2) + '…' + seg[0].slice(-9) : seg[0], M.left - 6, y - 6);
      ctx.strokeStyle = '#c3cad2'; ctx.beginPath(); ctx.moveTo(M.left, y); ctx.lineTo(w - M.right, y); ctx.stroke();
    }
    let status, complete = true;
    if (detailMode()) {
      const recs = windowRecords();
      if (!recs) { status = 'inflating the allocations of this window…'; drawHeat(ctx, w, h, dev); complete = false; }
      else {
        const sel = S.node;
        /* planned classes only: workspace and activation blocks, on an axis of their own */
        let ymap = null;
        if (S.plannedOnly) {
          const iv = [];
          for (const r of recs) for (let i = 0; i < r.n; i++)
            if (r.dev[i] === S.dev && r.cls[i] <= 1 && (r.free[i] < 0 ? D.span : r.free[i]) >= S.lo && r.alloc[i] <= S.hi) iv.push([r.y[i], r.y[i] + r.bytes[i]]);
          ymap = compactor(iv);
        }
        const yAt = ymap ? (v) => h - M.bottom - ymap.map(v) / ymap.span * (h - M.top - M.bottom) : yOf;
        for (const pass of sel >= 0 ? [0, 1] : [1]) for (const inside of [0, 1]) { /* regions over what holds them */
          for (const r of recs) for (let i = 0; i < r.n; i++) {
            if (r.dev[i] !== S.dev || r.region[i] !== inside || (ymap && r.cls[i] > 1)) continue;
            const end = r.free[i] < 0 ? D.span : r.free[i];
            if (end < S.lo || r.alloc[i] > S.hi) continue;
            const chosen = sel < 0 || r.node[i] === sel;
            if (sel >= 0 && (pass === 0) === chosen) continue;
            const x0 = Math.max(M.left, xOf(r.alloc[i], w)), x1 = Math.min(w - M.right, xOf(end, w));
            const y1 = yAt(r.y[i]), y0 = ymap ? y1 - r.bytes[i] / ymap.span * (h - M.top - M.bottom) : yOf(r.y[i] + r.bytes[i]);
            ctx.globalAlpha = chosen ? 1 : 0.15;
            ctx.fillStyle = blockColour(r, i);
            ctx.fillRect(x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0));
            if (pass === 1 || sel < 0) drawnBlocks.push([x0, Math.max(1, x1 - x0), y0, Math.max(1, y1 - y0), r, i]);
          }
        }
        ctx.globalAlpha = 1;
        status = grouped(drawnBlocks.length) + ' blocks drawn';
      }
    } else {
      complete = drawHeat(ctx, w, h, dev);
      status = 'overview of ' + grouped(windowCount(S.lo, S.hi)) + ' allocations: occupancy per cell, coloured by the class that holds most of it; zoom in for the blocks';
    }
    ctx.strokeStyle = '#9aa5b1'; ctx.strokeRect(M.left, M.top, w - M.left - M.right, h - M.top - M.bottom);
    const count = $('blocks-count');
    count.textContent = status;
    count.dataset.count = String(drawnBlocks.length);
    const legend = $('blocks-legend');
    legend.innerHTML = '';
    if (S.colour === 'class' || !detailMode()) D.classes.forEach((c, i) => { if (!(S.plannedOnly && i > 1 && detailMode())) addLegend(legend, CLASS_COLOURS[i], c); });
    else addLegend(legend, '#888', 'colour: node (click a block to select its node)');
    return complete;
  }
  const heatImages = new Map();
  /* false while the cells are still being inflated */
  function drawHeat(ctx, w, h, dev) {
    if (!D.lod) return true;
    const lod = D.lod, key = S.dev;
    if (!heatImages.has(key)) {
      heatImages.set(key, null);
      inflate(lod.devices[S.dev].heat).then((cells) => { heatImages.set(key, cells); schedule(); });
    }
    const cells = heatImages.get(key);
    if (!cells) return false;
    const T = lod.heat_t, Y = lod.heat_y, cellNs = (D.span + 1) / T;
    const rgb = CLASS_COLOURS.map((c) => [1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16)));
    const c0 = Math.max(0, Math.floor(S.lo / cellNs)), c1 = Math.min(T - 1, Math.floor(S.hi / cellNs));
    const ph = (h - M.top - M.bottom) / Y;
    for (let cx = c0; cx <= c1; cx++) {
      const x0 = Math.max(M.left, xOf(cx * cellNs, w)), x1 = Math.min(w - M.right, xOf((cx + 1) * cellNs, w));
      for (let cy = 0; cy < Y; cy++) {
        const v = cells[cx * Y + cy];
        if (!(v & 31)) continue;
        const c = rgb[Math.min(v >> 5, rgb.length - 1)];
        ctx.fillStyle = 'rgba(' + c[0] + ',' + c[1] + ',' + c[2] + ',' + (0.25 + 0.75 * (v & 31) / 31).toFixed(3) + ')';
        ctx.fillRect(x0, h - M.bottom - (cy + 1) * ph, Math.max(1, x1 - x0), ph + 0.5);
      }
    }
    void dev;
    return true;
  }
  function blockAt(x, y) {
    for (let k = drawnBlocks.length - 1; k >= 0; k--) {
      const b = drawnBlocks[k];
      if (x >= b[0] - 1 && x <= b[0] + b[1] + 1 && y >= b[2] - 1 && y <= b[2] + b[3] + 1) return b;
    }
    return null;
  }
  const allocationNames = new Map((D.allocation_names || []).map((e) => [e[0], e[1]]));
  function describe(r, i) {
    const dev = D.devices[r.dev[i]];
    const named = allocationNames.get(r.id[i]);
    const lines = [
      nodeName(r.node[i]),
      ...(named !== undefined ? ['named: ' + named] : []),
      'size: ' + exact(r.bytes[i]) + ' · ' + D.classes[r.cls[i]] + (r.region[i] ? ' · a region of an NVTX heap' : ''),
      'API: ' + (D.apis[r.api[i]] || '?') + ' · device ' + dev.device,
      'layer: ' + layerName(r.layer[i]),
      'thread: ' + threadName(r.thread[i]),
      runLabel(r.run[i]),
      'address: ' + hexAddress(dev, r.y[i]),
      'allocated at ' + duration(r.alloc[i]) + (r.free[i] < 0 ? ', never freed' : ', freed at ' + duration(r.free[i]) + ' (lived ' + duration(r.free[i] - r.alloc[i]) + ')'),
      'allocation #' + r.id[i],
    ];
    return lines.join('\n');
  }
  function threadName(i) {
    const t = D.threads[i];
    if (!t) return '?';
    return (t[2] !== null ? t[2] : 'thread') + ' (' + t[1] + ')';
  }

  /* ---- selection: a node's allocations ---- */
  function selectNode(node) {
    S.node = node;
    const panel = $('selection-panel');
    if (node < 0) { panel.hidden = true; schedule(); return; }
    const rows = [];
    const all = [D.detail.spanning].concat(D.detail.chunks);
    Promise.all(all.map((c) => loadChunk(c.el, c.n))).then((recs) => {
      for (const r of recs) for (let i = 0; i < r.n; i++) {
        if (r.node[i] !== node) continue;
        rows.push([r.id[i], r.bytes[i], D.classes[r.cls[i]], D.devices[r.dev[i]].device, r.run[i] >= 0 ? D.runs[r.run[i]][0] : null,
          r.alloc[i] / 1e6, r.free[i] < 0 ? null : (r.free[i] - r.alloc[i]) / 1e3, hexAddress(D.devices[r.dev[i]], r.y[i]), D.apis[r.api[i]]]);
      }
      rows.sort((a, b) => a[0] - b[0]);
      $('selection-title').textContent = nodeName(node) + ': ' + grouped(rows.length) + ' allocations';
      renderTable($('selection-table'), ['allocation', 'bytes', 'class', 'device', 'run', 'allocated (ms)', 'lifetime (µs)', 'address', 'api'], rows, {});
      panel.hidden = false;
    });
    schedule();
  }

  /* ---- the plan of a shape key beside its dynamic run ---- */
  let planDrawn = { dynamic: [], static: [] };
  function currentPlan() {
    if (!D.plans.length) return null;
    if (S.shape >= 0) return D.plans.find((p) => p.shape === S.shape) || null;
    if (S.run >= 0) return D.plans.find((p) => p.run === D.runs[S.run][0] || (p.shape >= 0 && p.shape === D.runs[S.run][1])) || null;
    return D.plans[0];
  }
  function drawPlan() {
    const plan = currentPlan();
    $('plan-panel').hidden = !plan;
    if (!plan) return;
    const shape = plan.shape >= 0 ? D.shapes[plan.shape] : '(no shape key)';
    $('plan-facts').textContent = 'shape key ' + shape + ' · planned from run ' + plan.run + ' · ' + grouped(plan.blocks.length) +
      ' blocks · planned peak ' + exact(plan.planned_peak) + ' · load bound ' + exact(plan.load_bound) +
      ' · dynamic peak ' + exact(plan.dynamic_peak) + ' · ' + plan.algorithm;
    const events = plan.blocks.reduce((m, b) => Math.max(m, b[2]), 1);
    /* the dynamic addresses without the stretches the run's blocks leave empty */
    const dyn = compactor(plan.blocks.filter((b) => b[9] >= 0).map((b) => [b[9], b[9] + b[4]]));
    planDrawn = {
      dynamic: drawPlanSide($('plan-dynamic'), plan, events, (b) => (b[9] < 0 ? null : [dyn.map(b[9]), b[4]]), dyn.span, null),
      static: drawPlanSide($('plan-static'), plan, events, (b) => [b[5], b[3]], Math.max(plan.planned_peak, 1), plan),
    };
  }
  function drawPlanSide(canvas, plan, events, place, top, bounds) {
    const { ctx, w, h } = setupCanvas(canvas);
    ctx.clearRect(0, 0, w, h);
    const ml = 70, mr = 10, mt = 10, mb = 24, scaleTop = top * 1.06;
    const xOfE = (e) => ml + e / events * (w - ml - mr), yOfB = (v) => h - mb - v / scaleTop * (h - mt - mb);
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#5f6b76'; ctx.strokeStyle = '#eef0f2'; ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    const step = niceStep(scaleTop / 5);
    for (let v = 0; v <= scaleTop; v += step) { const y = yOfB(v); ctx.beginPath(); ctx.moveTo(ml, y); ctx.lineTo(w - mr, y); ctx.stroke(); ctx.fillText(human(v), ml - 5, y); }
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    const es = niceStep(events / 6);
    for (let e = 0; e <= events; e += es) ctx.fillText(String(e), xOfE(e), h - mb + 5);
    const drawn = [];
    for (const b of plan.blocks) {
      const p = place(b);
      if (!p) continue;
      const x0 = xOfE(b[1]), x1 = xOfE(b[2]), y0 = yOfB(p[0] + p[1]), y1 = yOfB(p[0]);
      ctx.fillStyle = S.colour === 'node' ? nodeColour(b[6]) : CLASS_COLOURS[b[7] >= 0 ? b[7] : 3];
      ctx.globalAlpha = S.hoverOrdinal < 0 || S.hoverOrdinal === b[0] ? 1 : 0.25;
      ctx.fillRect(x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0));
      if (S.hoverOrdinal === b[0]) { ctx.globalAlpha = 1; ctx.strokeStyle = '#000'; ctx.lineWidth = 1.5; ctx.strokeRect(x0, y0, Math.max(1, x1 - x0), Math.max(1, y1 - y0)); ctx.lineWidth = 1; }
      drawn.push([x0, Math.max(1, x1 - x0), y0, Math.max(1, y1 - y0), b]);
    }
    ctx.globalAlpha = 1;
    if (bounds) {
      ctx.setLineDash([6, 4]); ctx.lineWidth = 1.4;
      for (const [v, c] of [[bounds.load_bound, '#d62728'], [bounds.planned_peak, '#222']]) {
        ctx.strokeStyle = c; ctx.beginPath(); ctx.moveTo(ml, yOfB(v)); ctx.lineTo(w - mr, yOfB(v)); ctx.stroke();
      }
      ctx.setLineDash([]); ctx.lineWidth = 1;
    }
    ctx.strokeStyle = '#9aa5b1'; ctx.strokeRect(ml, mt, w - ml - mr, h - mt - mb);
    ctx.fillStyle = '#5f6b76'; ctx.textAlign = 'right'; ctx.fillText('allocation and free events of the run →', w - mr, h - 12);
    return drawn;
  }

  /* ---- tables ---- */
  function isNumber(v) { return typeof v === 'number'; }
  function renderTable(box, columns, rows, opts) {
    const table = document.createElement('table');
    table.className = 'data';
    const head = table.createTHead().insertRow();
    let sortCol = -1, asc = true;
    columns.forEach((c, k) => {
      const th = document.createElement('th');
      th.textContent = c;
      th.addEventListener('click', () => {
        asc = sortCol === k ? !asc : true;
        sortCol = k;
        rows.sort((a, b) => {
          const x = a[k], y = b[k];
          if (x === null && y === null) return 0;
          if (x === null) return 1;
          if (y === null) return -1;
          const r = isNumber(x) && isNumber(y) ? x - y : String(x).localeCompare(String(y));
          return asc ? r : -r;
        });
        Array.from(head.cells).forEach((cell, j) => { cell.className = j === k ? (asc ? 'sorted-asc' : 'sorted-desc') : ''; });
        fill();
      });
      head.appendChild(th);
    });
    const body = table.createTBody();
    function fill() {
      body.innerHTML = '';
      for (const row of rows) {
        const tr = body.insertRow();
        if (opts.flag && opts.flag(row)) tr.className = 'flag';
        row.forEach((v, k) => {
          const td = tr.insertCell();
          if (isNumber(v)) {
            td.className = 'num';
            td.textContent = /bytes$/.test(columns[k]) ? human(v) : Number.isInteger(v) ? grouped(v) : v.toFixed(3);
            if (/bytes$/.test(columns[k])) td.title = grouped(v) + ' B';
          } else td.textContent = v === null ? '—' : String(v);
        });
      }
    }
    fill();
    box.innerHTML = '';
    box.appendChild(table);
    return table;
  }
  /* Result tables that have a panel, in order; a table absent from the trace has none.  A new
   * result table (the layers of a partition against a budget) gets its panel by an entry here. */
  const TABLE_PANELS = [
    { table: 'verifications', title: 'Verification: Level 2 against Level 1 and observed use', summary: 'verdict', flag: (c) => (r) => r[c.indexOf('verdict')] !== 'ok' },
    { table: 'resolutions', title: 'Resolution per node: the planner\'s ledger (planner_*, max(profile, estimator)) and ONNX Runtime\'s (ort_*, the accountant\'s cost)', summary: 'planner_source' },
    { table: 'partitions', title: 'Partitions: one per device and budget (wstrace partition)' },
    { table: 'partition', title: 'Layers against the budget' },
    { table: 'partition_layers', title: 'Layers against the budget: the cost of each layer, in the order the layers ran' },
    { table: 'partition_rules', title: 'Name-based rules: the nodes each pattern matches', summary: 'verdict', flag: (c) => (r) => r[c.indexOf('verdict')] !== 'ok' },
  ];
  /* The layers of each partition as one bar against its budget, the cut marked (tables partitions
   * and partition_layers, docs/partition.md). */
  const SVGNS = 'http://www.w3.org/2000/svg';
  function svgEl(name, attrs, parent) {
    const e = document.createElementNS(SVGNS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function drawPartitions(box) {
    const P = D.tables.partitions, L = D.tables.partition_layers;
    if (!P || !L) return;
    const pc = (name) => P.columns.indexOf(name), lc = (name) => L.columns.indexOf(name);
    const panel = document.createElement('section');
    panel.className = 'panel';
    panel.id = 'partition-panel';
    const h = document.createElement('h2');
    h.textContent = 'Layers against the budget';
    panel.appendChild(h);
    const sub = document.createElement('div');
    sub.className = 'sub';
    sub.textContent = 'Each bar: the layers in the order they ran, each as wide as its cost (persistent + peak activations + workspace + share of the parts outside every layer); blue layers fit, the black line is the cut, the red dashed line the budget.';
    panel.appendChild(sub);
    for (const row of P.rows) {
      const id = row[pc('id')], budget = row[pc('budget_bytes')], used = row[pc('used_bytes')];
      const fixed = row[pc('fixed_bytes')] || 0, total = row[pc('total_bytes')];
      const layers = L.rows.filter((r) => r[lc('partition_id')] === id).sort((a, b) => a[lc('ordinal')] - b[lc('ordinal')]);
      const fig = document.createElement('figure');
      fig.className = 'partition';
      fig.dataset.partition = String(id);
      const cap = document.createElement('figcaption');
      cap.textContent = 'device ' + row[pc('device')] + ', budget ' + human(budget) + ' (' + grouped(budget) + ' B): ' +
        row[pc('layers_fit')] + ' of ' + row[pc('layers')] + ' layers fit, ' + human(used) + ' used, ' + human(row[pc('left_bytes')]) +
        ' left; ONNX Runtime\'s node-level rule accepts ' + row[pc('ort_nodes_accepted')] + ' of ' + row[pc('ort_nodes')] + ' nodes';
      fig.appendChild(cap);
      const W = 1000, H = 64, left = 4, width = W - 8, top = Math.max(budget, total, 1) * 1.04;
      const x = (b) => left + width * b / top;
      const svg = svgEl('svg', { class: 'partition-bar', viewBox: '0 0 ' + W + ' ' + H, width: '100%', height: String(H) }, fig);
      if (fixed > 0) svgEl('rect', { class: 'layer-seg outside', x: x(0), y: 14, width: x(fixed) - x(0), height: 30, fill: '#8a8f96' }, svg);
      layers.forEach((r, i) => {
        const cost = r[lc('cost_bytes')], end = r[lc('cumulative_bytes')], fits = r[lc('fits')] === 1;
        const seg = svgEl('rect', { class: 'layer-seg ' + (fits ? 'fits' : 'off'), x: x(end - cost), y: 14, width: Math.max(0, x(end) - x(end - cost)), height: 30,
          fill: fits ? (i % 2 ? '#5b98d0' : '#3b78b0') : (i % 2 ? '#b3b9bf' : '#c9ced3'), stroke: '#fff', 'stroke-width': 0.5 }, svg);
        seg.dataset.layer = r[lc('layer')];
        svgEl('title', {}, seg).textContent = r[lc('layer')] + ': ' + human(cost) + ' (' + grouped(cost) + ' B)' + (fits ? ', fits' : '');
      });
      svgEl('line', { class: 'cut', x1: x(used), x2: x(used), y1: 8, y2: 50, stroke: '#111', 'stroke-width': 3 }, svg);
      svgEl('line', { class: 'budget', x1: x(budget), x2: x(budget), y1: 4, y2: 60, stroke: '#c0392b', 'stroke-width': 2, 'stroke-dasharray': '6 3' }, svg);
      const rule = document.createElement('div');
      rule.className = 'sub rule';
      rule.textContent = 'session.name_based_layer_assignment = ' + row[pc('name_based_layer_assignment')] +
        '   session.resource_cuda_partitioning_settings = ' + row[pc('resource_cuda_partitioning_settings')];
      fig.appendChild(rule);
      panel.appendChild(fig);
    }
    box.appendChild(panel);
  }
  function drawTables() {
    const box = $('table-panels');
    drawPartitions(box);
    for (const p of TABLE_PANELS) {
      const t = D.tables[p.table];
      if (!t) continue;
      const panel = document.createElement('section');
      panel.className = 'panel';
      panel.id = 'table-' + p.table;
      const h = document.createElement('h2');
      h.textContent = p.title + ' (' + grouped(t.rows.length) + ' rows)';
      panel.appendChild(h);
      const col = p.summary ? t.columns.indexOf(p.summary) : -1;
      if (col >= 0) {
        const counts = new Map();
        for (const r of t.rows) counts.set(r[col], (counts.get(r[col]) || 0) + 1);
        const chips = document.createElement('div');
        chips.className = 'chips';
        for (const [k, n] of counts) {
          const chip = document.createElement('span');
          chip.className = 'chip' + (p.table === 'verifications' ? (k === 'ok' ? ' good' : ' bad') : '');
          chip.textContent = k + ': ' + n;
          chips.appendChild(chip);
        }
        panel.appendChild(chips);
      }
      const wrap = document.createElement('div');
      wrap.className = 'table-wrap';
      panel.appendChild(wrap);
      renderTable(wrap, t.columns, t.rows.map((r) => r.slice()), { flag: p.flag ? p.flag(t.columns) : null });
      box.appendChild(panel);
    }
  }

  /* ---- controls ---- */
  function option(select, value, text) {
    const o = document.createElement('option');
    o.value = value; o.textContent = text;
    select.appendChild(o);
  }
  function fillRuns() {
    const sel = $('run');
    sel.innerHTML = '';
    option(sel, -1, 'all (' + D.runs.length + ')');
    D.runs.forEach((r, i) => {
      if (S.shape >= 0 && r[1] !== S.shape) return;
      const end = r[3] < 0 ? D.span : r[3];
      option(sel, i, runLabel(i) + ' · ' + duration(end - r[2]));
    });
    sel.value = String(S.run);
  }
  function setWindow(lo, hi) {
    const min = 1000; /* 1 µs */
    if (hi - lo < min) { const mid = (lo + hi) / 2; lo = mid - min / 2; hi = mid + min / 2; }
    const span = Math.max(D.span, 1);
    if (hi - lo > span) { lo = 0; hi = span; }
    if (lo < 0) { hi -= lo; lo = 0; }
    if (hi > span) { lo -= hi - span; hi = span; }
    S.lo = Math.max(0, lo); S.hi = hi;
    schedule();
  }
  function zoom(factor, at) {
    const c = at === undefined ? (S.lo + S.hi) / 2 : at;
    setWindow(c - (c - S.lo) * factor, c + (S.hi - c) * factor);
  }
  function runWindow(i) {
    const r = D.runs[i], end = r[3] < 0 ? D.span : r[3], pad = (end - r[2]) * 0.02;
    setWindow(r[2] - pad, end + pad);
  }
  function wireCanvas(canvas, hover) {
    let drag = null;
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      zoom(e.deltaY < 0 ? 0.8 : 1.25, tOf(e.clientX - rect.left, rect.width));
    }, { passive: false });
    canvas.addEventListener('mousedown', (e) => { drag = { x: e.clientX, lo: S.lo, hi: S.hi, moved: false }; });
    window.addEventListener('mouseup', () => { if (drag) canvas.classList.remove('dragging'); setTimeout(() => { drag = null; }, 0); });
    canvas.addEventListener('mousemove', (e) => {
      const rect = canvas.getBoundingClientRect();
      if (drag && (e.buttons & 1)) {
        const dx = e.clientX - drag.x;
        if (Math.abs(dx) > 2) { drag.moved = true; canvas.classList.add('dragging'); }
        const dt = dx / (rect.width - M.left - M.right) * (drag.hi - drag.lo);
        setWindow(drag.lo - dt, drag.hi - dt);
        return;
      }
      hover(e.clientX - rect.left, e.clientY - rect.top, e);
    });
    canvas.addEventListener('mouseleave', hideTip);
    canvas.addEventListener('dblclick', () => { S.run = -1; $('run').value = '-1'; setWindow(0, D.span); });
    return () => drag && drag.moved;
  }
  function showTip(text, e) {
    const tip = $('tooltip');
    tip.textContent = text;
    tip.hidden = false;
    const x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    const y = Math.min(e.clientY + 14, window.innerHeight - tip.offsetHeight - 8);
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  }
  function hideTip() { $('tooltip').hidden = true; }

  function setup() {
    $('trace-name').textContent = D.trace;
    document.title = 'wstrace view: ' + D.trace;
    const facts = [grouped(D.allocations) + ' device allocations' + (D.regions ? ' (and ' + grouped(D.regions) + ' regions of NVTX heaps)' : ''), D.runs.length + ' runs' + (D.runs_from_ranges ? ' (outermost ranges)' : ''),
      D.nodes.length + ' nodes', duration(D.span) + ' traced'];
    if (D.meta.lost_records && D.meta.lost_records !== '0') facts.push(D.meta.lost_records + ' records lost');
    if (D.meta.clean_exit === '0') facts.push('the process did not exit cleanly');
    $('trace-facts').textContent = facts.join(' · ');
    S.dev = Math.min(hashNumber('device', S.dev), Math.max(0, D.devices.length - 1));
    S.shape = hashNumber('shape', -1) < D.shapes.length ? hashNumber('shape', -1) : -1;
    if (['class', 'node', 'layer'].includes(HASH.get('stack'))) S.stack = HASH.get('stack');
    if (['class', 'node'].includes(HASH.get('colour'))) S.colour = HASH.get('colour');
    S.plannedOnly = HASH.get('planned') === '1';
    $('stack').value = S.stack; $('colour').value = S.colour; $('planned-only').checked = S.plannedOnly;
    const dsel = $('device');
    D.devices.forEach((d, i) => option(dsel, i, (d.process_name ? d.process_name + ' · ' : '') + 'device ' + d.device));
    dsel.value = String(S.dev);
    dsel.addEventListener('change', () => { S.dev = Number(dsel.value); detailTop = null; schedule(); });
    const ssel = $('shape');
    option(ssel, -1, 'all (' + D.shapes.length + ')');
    D.shapes.forEach((s, i) => option(ssel, i, s));
    ssel.value = String(S.shape);
    ssel.addEventListener('change', () => {
      S.shape = Number(ssel.value);
      S.run = -1;
      if (S.shape >= 0) { const first = D.runs.findIndex((r) => r[1] === S.shape); if (first >= 0) S.run = first; }
      fillRuns();
      if (S.run >= 0) runWindow(S.run); else schedule();
    });
    const run = hashNumber('run', -1);
    if (run < D.runs.length && (S.shape < 0 || (run >= 0 && D.runs[run][1] === S.shape))) S.run = run;
    fillRuns();
    if (S.run >= 0) runWindow(S.run);
    $('run').addEventListener('change', () => {
      S.run = Number($('run').value);
      if (S.run >= 0) runWindow(S.run); else setWindow(0, D.span);
    });
    $('stack').addEventListener('change', () => { S.stack = $('stack').value; schedule(); });
    $('colour').addEventListener('change', () => { S.colour = $('colour').value; schedule(); });
    $('planned-only').addEventListener('change', () => { S.plannedOnly = $('planned-only').checked; schedule(); });
    $('zoom-in').addEventListener('click', () => zoom(0.5));
    $('zoom-out').addEventListener('click', () => zoom(2));
    $('zoom-reset').addEventListener('click', () => { S.run = -1; $('run').value = '-1'; setWindow(0, D.span); });
    $('selection-clear').addEventListener('click', () => selectNode(-1));
    window.addEventListener('keydown', (e) => {
      if (e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT') return;
      if (e.key === '+' || e.key === '=' || e.key === 'w') zoom(0.5);
      else if (e.key === '-' || e.key === 's') zoom(2);
      else if (e.key === '0') setWindow(0, D.span);
      else if (e.key === 'a' || e.key === 'ArrowLeft') setWindow(S.lo - (S.hi - S.lo) * 0.2, S.hi - (S.hi - S.lo) * 0.2);
      else if (e.key === 'd' || e.key === 'ArrowRight') setWindow(S.lo + (S.hi - S.lo) * 0.2, S.hi + (S.hi - S.lo) * 0.2);
      else if (e.key === 'Escape') selectNode(-1);
    });
    const liveDragged = wireCanvas($('live'), (x, y, e) => {
      const c = liveColumns && liveColumns[Math.floor(x - M.left)];
      if (!c || x < M.left) { hideTip(); return; }
      const rect = $('live').getBoundingClientRect(), t = tOf(x, rect.width);
      const parts = D.classes.map((name, i) => name + ': ' + exact(c.cls[i]));
      showTip(duration(t) + '\nlive: ' + exact(c.total) + '\n' + parts.join('\n'), e);
    });
    const blocksDragged = wireCanvas($('blocks'), (x, y, e) => {
      const b = blockAt(x, y);
      if (b) showTip(describe(b[4], b[5]), e); else hideTip();
    });
    $('blocks').addEventListener('click', (e) => {
      if (blocksDragged()) return;
      const rect = $('blocks').getBoundingClientRect(), b = blockAt(e.clientX - rect.left, e.clientY - rect.top);
      selectNode(b ? b[4].node[b[5]] : -1);
    });
    void liveDragged;
    for (const side of ['dynamic', 'static']) {
      const canvas = $('plan-' + side);
      canvas.addEventListener('mousemove', (e) => {
        const rect = canvas.getBoundingClientRect(), x = e.clientX - rect.left, y = e.clientY - rect.top;
        const hit = planDrawn[side].slice().reverse().find((d) => x >= d[0] && x <= d[0] + d[1] && y >= d[2] && y <= d[2] + d[3]);
        const ordinal = hit ? hit[4][0] : -1;
        if (hit) {
          const b = hit[4];
          showTip(nodeName(b[6]) + '\nallocation ' + b[0] + ' of the run (#' + b[8] + ')\nblock ' + exact(b[3]) + ', requested ' + exact(b[4]) +
            '\nplanned offset ' + grouped(b[5]) + '\nlifetime: events ' + b[1] + '–' + b[2] + (b[7] >= 0 ? '\n' + D.classes[b[7]] : ''), e);
        } else hideTip();
        if (ordinal !== S.hoverOrdinal) { S.hoverOrdinal = ordinal; drawPlan(); }
      });
      canvas.addEventListener('mouseleave', () => { hideTip(); if (S.hoverOrdinal >= 0) { S.hoverOrdinal = -1; drawPlan(); } });
    }
    window.addEventListener('resize', schedule);
    drawTables();
  }

  function peakLabel() {
    const dev = D.devices[S.dev], el = $('peak-label');
    if (!dev) { el.textContent = 'no device allocations'; return; }
    el.innerHTML = '';
    const b = document.createElement('b');
    b.textContent = 'peak ' + exact(dev.peak);
    el.appendChild(b);
    el.appendChild(document.createTextNode(' on device ' + dev.device + ' at ' + duration(dev.peak_ns) + ' · ' + grouped(dev.allocs) + ' allocations'));
    el.dataset.bytes = String(dev.peak);
  }

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(render);
  }
  function render() {
    pending = false;
    $('window-label').textContent = duration(S.lo) + ' – ' + duration(S.hi) + ' (' + duration(S.hi - S.lo) + ')' + (detailMode() ? '' : ' · overview');
    peakLabel();
    const live = drawLive(), blocks = drawBlocks();
    drawPlan();
    if (live && blocks) {
      if (!document.body.dataset.readyMs) document.body.dataset.readyMs = String(Math.round(performance.now()));
      document.body.dataset.ready = '1';
    }
  }

  setup();
  render();
})();
