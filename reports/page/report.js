// aispflow report, part 2 of 2: draws the page from the one JSON document in script#aispflow-data
// (reports/run_data.cpp for a run, reports/run_diff.cpp for a comparison). It only reads that document.
var T0 = performance.now();
var DOC = JSON.parse(document.getElementById('aispflow-data').textContent);
var APP = document.getElementById('app');
var NAV = [];

function verdictOf(code) {
  return ({0: ['PASS', 'ok', 'every selected node ran or was cached, and every expectation was met'],
           1: ['NODE FAILED', 'bad', 'a node failed; its descendants were skipped'],
           2: ['BAD INPUT', 'bad', 'bad input: nothing ran'],
           3: ['EXPECTATIONS NOT MET', 'bad', 'an expect or alltoall verdict was not met'],
           130: ['INTERRUPTED', 'warn', 'interrupted; the report holds what finished']})[code] ||
         ['EXIT ' + code, 'warn', 'exit code ' + code];
}
function add(id, title, sub, count, build) {
  var s = section(id, title, sub);
  try {
    append(s, build());
  } catch (e) {   // one broken section must not hide the others, but it is still an error people and tests see
    window.onerror(String(e && e.message || e), '', 0, 0);
    append(s, empty('could not draw this section: ' + e));
  }
  APP.appendChild(s);
  NAV.push({id: id, title: title, count: count});
}
function card(k, v, d) { return el('div', {class: 'card'}, el('div', {class: 'k'}, k), el('div', {class: 'v'}, v), d ? el('div', {class: 'd'}, d) : null); }
function statusCounts(nodes) { return countBy(nodes, 'status'); }
function deviceText(fp) {
  if (!fp) return ['not recorded', 'no node probed the machine and no artifact carries an env'];
  var name = fp.gpu ? (fp.gpu_count > 1 ? fp.gpu_count + ' \u00d7 ' : '') + fp.gpu : fp.cpu_model || fp.device || '';
  var extra = [fp.cc ? 'sm_' + String(fp.cc).replace('.', '') : '', fp.sm_count ? fp.sm_count + ' SMs' : '',
               fp.driver ? 'driver ' + fp.driver : '', fp.cuda_runtime ? 'CUDA ' + fp.cuda_runtime : '',
               !fp.gpu && fp.logical_cpus ? fp.logical_cpus + ' threads' : '', !fp.gpu && fp.isa ? fp.isa : ''];
  return [name, extra.filter(Boolean).join(' \u00b7 ')];
}
function kvList(obj) {
  var dl = el('dl', {class: 'kv'});
  Object.keys(obj || {}).forEach(function (k) {
    var v = obj[k];
    append(dl, [el('dt', null, k), el('dd', null, typeof v === 'object' ? JSON.stringify(v) : String(v))]);
  });
  return dl;
}

// ---- a run ------------------------------------------------------------------------------------------------

function header(title, verdict, metaLines) {
  var h = el('header', {class: 'top'},
    el('h1', null, el('span', {class: 'brand'}, 'aispflow'), title),
    el('span', {class: 'verdict ' + verdict[1], title: verdict[2], id: 'verdict'}, verdict[0]),
    el('div', {class: 'meta'}, metaLines.map(function (l) { return el('div', null, l); })));
  document.body.insertBefore(h, APP);
}

function summarySection(run) {
  var nodes = DOC.nodes, counts = statusCounts(nodes), recs = DOC.records || [];
  var started = new Date(run.started), ended = new Date(started.getTime() + (run.seconds || 0) * 1000);
  var version = String(run.aispflow_version || '').split('+');
  var dev = DOC.device ? deviceText(DOC.device.fingerprint) : deviceText(null);
  var rc = countBy(recs, 'status'), verified = recs.filter(function (r) { return r.verified === true; }).length;
  var cards = el('div', {class: 'cards'},
    card('Workflow', run.workflow, run.file),
    card('Verdict', verdictOf(run.exit_code)[0] + ' (exit ' + run.exit_code + ')', verdictOf(run.exit_code)[2]),
    card('Build', 'aispflow ' + (version[0] || '?'), version[1] ? 'commit ' + version[1] : ''),
    card('Device', dev[0] || '?', [dev[1], DOC.device ? ' (' + DOC.device.source + ')' : '']),
    card('Backend', run.backend || '?'),
    card('Started', fmtTime(run.started), 'ended ' + (isNaN(ended) ? '?' : fmtTime(ended.toISOString()))),
    card('Wall time', fmtSeconds(run.seconds)),
    card('Nodes', nodes.length + ' nodes', ['ran', 'cached', 'failed', 'skipped'].map(function (s) {
      return [chip((counts[s] || 0) + ' ' + s, s), ' '];
    })),
    card('Records', recs.length + ' GEMM records', recs.length ? [chip((rc.ok || 0) + ' ok', 'ok'), ' ',
      chip((rc.failed || 0) + ' failed', 'failed'), ' ', chip((rc.skipped || 0) + ' skipped', 'skipped'), ' ',
      verified + ' verified'] : 'no node wrote records'));
  var out = [cards];
  var warnings = DOC.warnings || [];
  if (warnings.length) out.push(el('ul', {class: 'warnings', id: 'warnings'}, warnings.map(function (w) {
    return el('li', null, el('b', null, w.source + ':'), w.message);
  })));
  if (DOC.device) out.push(el('details', null, el('summary', null, 'device fingerprint (' + DOC.device.source + ')'), kvList(DOC.device.fingerprint)));
  return out;
}

// Layered left-to-right drawing: a node's column is one past its deepest input; within a column, nodes sit
// near the average row of their inputs.
function dagSection() {
  var nodes = DOC.nodes, byName = {}, W = 236, H = 60, GX = 64, GY = 14, PAD = 14;
  nodes.forEach(function (n, i) { byName[n.name] = {n: n, layer: 0, pos: i}; });
  nodes.forEach(function (n) {
    (n.inputs || []).forEach(function (p) { if (byName[p]) byName[n.name].layer = Math.max(byName[n.name].layer, byName[p].layer + 1); });
  });
  var layers = [];
  nodes.forEach(function (n) { var L = byName[n.name].layer; (layers[L] = layers[L] || []).push(n); });
  layers.forEach(function (layer, li) {
    if (li > 0) layer.forEach(function (n) {
      var ins = (n.inputs || []).filter(function (p) { return byName[p]; });
      byName[n.name].key = ins.length ? ins.reduce(function (s, p) { return s + byName[p].pos; }, 0) / ins.length : 1e9;
    });
    if (li > 0) layer.sort(function (a, b) { return byName[a.name].key - byName[b.name].key; });
    layer.forEach(function (n, i) { byName[n.name].pos = i; });
  });
  var tallest = Math.max.apply(null, layers.map(function (l) { return l.length; }));
  var width = PAD * 2 + layers.length * W + (layers.length - 1) * GX, height = PAD * 2 + tallest * H + (tallest - 1) * GY;
  var g = svg('svg', {width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, id: 'dag-svg', role: 'img'},
    svg('defs', null, svg('marker', {id: 'dag-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto'},
      svg('path', {d: 'M0,0 L10,5 L0,10 z', fill: '#8a94a3'}))));
  function place(name) {
    var b = byName[name], layer = layers[b.layer], offset = (tallest - layer.length) * (H + GY) / 2;
    return {x: PAD + b.layer * (W + GX), y: PAD + offset + b.pos * (H + GY)};
  }
  nodes.forEach(function (n) {
    var to = place(n.name);
    (n.inputs || []).forEach(function (p) {
      if (!byName[p]) return;
      var from = place(p), x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x - 2, y2 = to.y + H / 2, mx = (x1 + x2) / 2;
      g.appendChild(svg('path', {d: 'M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2,
        fill: 'none', stroke: '#a7b0bd', 'stroke-width': 1.4, 'marker-end': 'url(#dag-arrow)'}));
    });
  });
  function clip(text, n) { text = String(text || ''); return text.length > n ? text.slice(0, n - 1) + '\u2026' : text; }
  nodes.forEach(function (n) {
    var p = place(n.name), c = STATUS_COLOURS[n.status] || STATUS_COLOURS.skipped;
    var line2 = n.type + ' \u00b7 ' + n.status + (n.status === 'ran' || n.status === 'failed' ? ' \u00b7 ' + fmtSeconds(n.seconds) : '');
    var why = n.status === 'failed' && n.error ? n.error : n.reason;
    var node = svg('g', {class: 'dag-node', transform: 'translate(' + p.x + ',' + p.y + ')', data: {node: n.name, status: n.status}},
      svg('title', {text: n.name + '\n' + n.type + ', ' + n.status + (n.exclusive ? ', exclusive' : '') + '\nreason: ' + (n.reason || '') +
                          (n.error ? '\nerror: ' + n.error : '') + (n.verdict ? '\nverdict: ' + n.verdict : '')}),
      svg('rect', {class: 'box', width: W, height: H, rx: 6, fill: c[0], stroke: c[1], 'stroke-width': 1.5}),
      svg('rect', {width: 6, height: H, rx: 3, fill: c[1]}),
      svg('text', {x: 14, y: 18, 'font-size': 13, 'font-weight': 600, fill: '#1d2430', text: clip(n.name, 27)}),
      svg('text', {x: 14, y: 34, 'font-size': 11, fill: c[1], text: clip(line2, 36)}),
      svg('text', {x: 14, y: 50, 'font-size': 11, fill: '#5f6b7a', text: clip(why, 38)}));
    if (n.exclusive) node.appendChild(svg('text', {x: W - 8, y: 18, 'font-size': 10, 'font-weight': 700, 'text-anchor': 'end', fill: '#7048e8', text: 'EXCL'}));
    if (n.verdict === 'expectations_not_met') node.appendChild(svg('text', {x: W - 8, y: 34, 'font-size': 10, 'font-weight': 700, 'text-anchor': 'end', fill: '#c92a2a', text: 'NOT MET'}));
    node.addEventListener('click', function () { showNode(n.name); });
    g.appendChild(node);
  });
  var counts = statusCounts(nodes);
  var legend = el('div', {class: 'legend'}, ['ran', 'cached', 'failed', 'skipped'].map(function (s) {
    var c = STATUS_COLOURS[s];
    return el('span', null, el('span', {class: 'sw', style: 'background:' + c[0] + ';border-color:' + c[1]}), s + ' (' + (counts[s] || 0) + ')');
  }), el('span', null, el('b', {style: 'color:#7048e8'}, 'EXCL'), ' ran alone (exclusive)'), el('span', null, 'click a node for its row below'));
  return [legend, el('div', {class: 'scroll dag-wrap'}, g)];
}

function showNode(name) {
  var row = document.querySelector('#nodes-table tr[data-node="' + CSS.escape(name) + '"]');
  if (!row) return;
  row.hidden = false;
  row.scrollIntoView({block: 'center'});
  row.classList.add('flash');
  setTimeout(function () { row.classList.remove('flash'); }, 1500);
}

function timelineSection() {
  var items = DOC.nodes.filter(function (n) { return n.started_at && n.finished_at; }).map(function (n) {
    return {n: n, s: Date.parse(n.started_at), f: Date.parse(n.finished_at)};
  }).sort(function (a, b) { return a.s - b.s; });
  var idle = DOC.nodes.length - items.length;
  if (!items.length) return empty('No node ran in this run (' + DOC.nodes.length + ' cached or skipped): nothing to place on a timeline.');
  var t0 = items[0].s, t1 = Math.max.apply(null, items.map(function (i) { return i.f; }));
  // As wide as the page allows (the section is not in the document yet; <main> is).
  var span = Math.max(1, t1 - t0), LABEL = 230, ROW = 22, TOP = 26, RIGHT = 20;
  var PLOT = Math.max(420, (APP.clientWidth || 1300) - 110 - LABEL - RIGHT);
  var width = LABEL + PLOT + RIGHT, height = TOP + items.length * ROW + 8;
  var g = svg('svg', {width: width, height: height, viewBox: '0 0 ' + width + ' ' + height, id: 'timeline-svg', role: 'img'});
  var x = function (t) { return LABEL + (t - t0) / span * PLOT; };
  var step = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000]
    .filter(function (s) { return span / s <= 10; })[0] || 600000;
  for (var t = 0; t <= span; t += step) {
    g.appendChild(svg('line', {x1: x(t0 + t), x2: x(t0 + t), y1: TOP - 6, y2: height - 4, stroke: '#e6e9ee'}));
    g.appendChild(svg('text', {x: x(t0 + t), y: 14, 'font-size': 10.5, 'text-anchor': 'middle', fill: '#5f6b7a', text: fmtSeconds(t / 1000)}));
  }
  items.forEach(function (it) {   // exclusive nodes shade the whole height: nothing else may overlap them
    if (it.n.exclusive) g.appendChild(svg('rect', {x: x(it.s), y: TOP - 6, width: Math.max(1, x(it.f) - x(it.s)), height: height - TOP + 2, fill: '#7048e8', 'fill-opacity': 0.07}));
  });
  // The duration beside the bar, or inside it where the bar reaches the right edge.
  // The duration right of the bar; near the right edge inside a long bar, else left of a short one.
  function label(it, y) {
    var text = (it.f > it.s ? fmtSeconds((it.f - it.s) / 1000) : '< 1 ms') + (it.n.exclusive ? ' \u00b7 exclusive' : '');
    var right = x(it.f) + 130 <= width, inside = !right && x(it.f) - x(it.s) > 140;
    return svg('text', {x: right ? x(it.f) + 5 : inside ? x(it.f) - 6 : x(it.s) - 6, y: y + 14, 'font-size': 10.5,
                        'text-anchor': right ? 'start' : 'end', fill: inside ? '#ffffff' : '#5f6b7a', text: text});
  }
  items.forEach(function (it, i) {
    var y = TOP + i * ROW, c = STATUS_COLOURS[it.n.status] || STATUS_COLOURS.ran;
    var fill = it.n.exclusive ? '#7048e8' : c[1];
    var row = svg('g', {class: 'tl-row', data: {node: it.n.name}},
      svg('title', {text: it.n.name + ' (' + it.n.type + ', ' + it.n.status + (it.n.exclusive ? ', exclusive' : '') + ')\n' +
                          it.n.started_at + ' \u2192 ' + it.n.finished_at + '\n' + fmtSeconds((it.f - it.s) / 1000)}),
      svg('text', {x: LABEL - 8, y: y + 14, 'font-size': 11.5, 'text-anchor': 'end', fill: '#1d2430', text: it.n.name.length > 32 ? it.n.name.slice(0, 31) + '\u2026' : it.n.name}),
      svg('rect', {x: x(it.s), y: y + 3, width: Math.max(2, x(it.f) - x(it.s)), height: ROW - 7, rx: 3, fill: fill}),
      label(it, y));
    g.appendChild(row);
  });
  var legend = el('div', {class: 'legend'},
    el('span', null, el('span', {class: 'sw', style: 'background:#2b8a3e;border-color:#2b8a3e'}), 'ran'),
    el('span', null, el('span', {class: 'sw', style: 'background:#c92a2a;border-color:#c92a2a'}), 'failed'),
    el('span', null, el('span', {class: 'sw', style: 'background:#7048e8;border-color:#7048e8'}), 'exclusive (held the device alone; shaded across all rows)'),
    idle ? el('span', null, idle + ' cached or skipped node(s) did no work and are not shown') : null);
  return [legend, el('div', {class: 'scroll'}, g)];
}

function plotsSection() {
  if (!DOC.plots.length) return empty('No node of this run wrote an SVG plot.');
  return el('div', {class: 'plots'}, DOC.plots.map(function (p, i) {
    var node = inlineSvg(p.svg, 'p' + i + '-');
    return el('figure', {class: 'plot', data: {node: p.node, file: p.file}},
      el('figcaption', null, el('b', null, p.node), ' / ' + p.file), node || empty('this file is not a readable SVG'));
  }));
}

function recordsSection() {
  var recs = DOC.records, multiNode = uniq(recs.map(function (r) { return r.node; })).length > 1;
  if (!recs.length) return empty('No node of this run wrote GEMM records.');
  var dims = function (r) { return r.m ? r.m + '\u00d7' + r.n + '\u00d7' + r.k + (r.batch > 1 ? ' \u00d7' + r.batch : '') : ''; };
  var columns = [
    {key: 'provider', label: 'provider'},
    {key: 'shape', label: 'shape', cell: function (r) { return [r.shape, el('span', {class: 'dims'}, dims(r))]; }},
    {key: 'dtype', label: 'dtype'},
    {key: 'layout', label: 'layout', cell: function (r) { return r.layout + (r.epilogue && r.epilogue !== 'none' ? ' ' + r.epilogue : ''); }},
    {key: 'status', label: 'status', cell: function (r) { return chip(r.status || '?', r.status, r.reason); }},
    {key: 'verified', label: 'verified', cell: function (r) { return mark(r.status === 'skipped' ? undefined : r.verified); },
     sort: function (r) { return r.verified === undefined ? null : r.verified ? 1 : 0; },
     title: function (r) { return r.max_rel_err !== undefined ? 'max rel err ' + fmt(r.max_rel_err) + ' (tolerance ' + fmt(r.tolerance) + ')' : null; }},
    {key: 'tflops', label: 'TFLOP/s', num: 1, cell: function (r) { return fmt(r.tflops); }},
    {key: 'pct_roof', label: '% of roof', num: 1, cell: function (r) { return pctBar(r.pct_roof); },
     title: function (r) { return r.binding ? 'bound by ' + r.binding + ' (' + r.roofline + ')' : null; },
     help: 'achieved / attainable at this intensity, from the roofline node'},
    {key: 'time_ms', label: 'time ms', num: 1, cell: function (r) {
      return r.time_ms === undefined ? '' : [fmt(r.time_ms), r.stdrel !== undefined ? el('span', {class: 'small'}, ' \u00b1' + fmt(r.stdrel * 100) + '%') : ''];
    }, help: 'median of the timed samples, \u00b1 standard deviation / mean'},
    {key: 'gbytes_per_s', label: 'GB/s', num: 1, cell: function (r) { return fmt(r.gbytes_per_s); }},
    {key: 'intensity', label: 'FLOP/B', num: 1, cell: function (r) { return fmt(r.intensity); }},
    {key: 'kernel', label: 'kernel / reason', cls: 'kernel', cell: function (r) {
      return r.status !== 'ok' && r.reason ? el('span', {class: 'why ' + r.status}, r.reason) : r.kernel ? el('span', {class: 'mono'}, r.kernel) : '';
    },
     title: function (r) { return (r.kernel || '') + (r.reason ? '\n' + r.reason : '') + (r.warnings ? '\nwarnings: ' + r.warnings.join('; ') : ''); }}];
  if (multiNode) columns.push({key: 'node', label: 'node'});
  // Per provider: how many verified records and its best number, before the full table.
  var providers = uniq(recs.map(function (r) { return r.provider; }));
  var best = providers.map(function (p) {
    var ok = recs.filter(function (r) { return r.provider === p && r.status === 'ok'; });
    var pcts = ok.map(function (r) { return r.pct_roof; }).filter(function (v) { return typeof v === 'number'; }).sort(function (a, b) { return a - b; });
    return {provider: p, records: recs.filter(function (r) { return r.provider === p; }).length, ok: ok.length,
            verified: ok.filter(function (r) { return r.verified; }).length,
            best: ok.length ? Math.max.apply(null, ok.map(function (r) { return r.tflops || 0; })) : undefined,
            median_pct: pcts.length ? pcts[Math.floor(pcts.length / 2)] : undefined};
  });
  var perProvider = dataTable({id: 'providers-table', rows: best, columns: [
    {key: 'provider', label: 'provider'}, {key: 'records', label: 'records', num: 1}, {key: 'ok', label: 'ok', num: 1},
    {key: 'verified', label: 'verified', num: 1}, {key: 'best', label: 'best TFLOP/s', num: 1, cell: function (r) { return fmt(r.best); }},
    {key: 'median_pct', label: 'median % of roof', num: 1, cell: function (r) { return pctBar(r.median_pct); }}]});
  return [perProvider, el('h3', null, 'Every record'), dataTable({id: 'records-table', rows: recs, columns: columns,
    filters: ['provider', 'dtype', 'status'].concat(multiNode ? ['node'] : []),
    rowClass: function (r) { return r.status === 'failed' ? 'bad record' : 'record'; }})];
}

function compareSection() {
  return DOC.compare.map(function (c) {
    var providers = c.providers || [];
    var summary = dataTable({id: 'compare-summary-' + c.node, rows: c.summary || [], columns: [
      {key: 'provider', label: 'provider'}, {key: 'wins', label: 'fastest on', num: 1},
      {key: 'pairs_with_baseline', label: 'pairs with baseline', num: 1},
      {key: 'geomean_speedup', label: 'geomean speedup', num: 1, cell: function (r) { return r.geomean_speedup ? fmt(r.geomean_speedup) + '\u00d7' : ''; }}]});
    var columns = [{key: 'shape', label: 'shape'}, {key: 'dtype', label: 'dtype'}, {key: 'fastest', label: 'fastest'}];
    providers.forEach(function (p) {
      columns.push({label: p + ' ' + (c.unit || ''), num: 1, sort: function (r) { return r.values[p]; },
                    cell: function (r) { return r.values[p] === null ? el('span', {class: 'none-mark', title: (r.missing || {})[p]}, '\u2013') : fmt(r.values[p]); }});
      if (p !== c.baseline) columns.push({label: p + ' speedup', num: 1, sort: function (r) { return r.speedup[p]; },
        cell: function (r) { var s = r.speedup[p]; return typeof s === 'number' ? el('span', {class: s >= 1 ? 'ok-mark' : 'bad-mark'}, fmt(s) + '\u00d7') : ''; }});
    });
    return [el('h3', null, c.node + ': ' + c.metric + ' (' + (c.unit || '') + ', ' + c.better + ' is better), speedup over ' + c.baseline),
            summary, dataTable({id: 'compare-' + c.node, rows: c.rows, columns: columns, filters: ['dtype', 'fastest']}),
            (c.warnings || []).length ? el('ul', {class: 'warnings'}, c.warnings.map(function (w) { return el('li', null, w); })) : null];
  });
}

function expectSection() {
  return DOC.expect.map(function (e) {
    var s = e.summary || {};
    return [el('h3', null, e.node + ' (' + (e.file || '') + '): ', chip((s.regressed || 0) + ' regressed', 'regressed'), ' ',
               chip((s.missing || 0) + ' missing', 'missing'), ' ', chip((s.improved || 0) + ' improved', 'improved'), ' ',
               chip((s.pass || 0) + ' pass', 'pass')),
      dataTable({id: 'expect-' + e.node, rows: e.results, filters: ['status'],
        rowClass: function (r) { return r.status === 'regressed' || r.status === 'missing' ? 'bad' : null; }, columns: [
        {key: 'status', label: 'status', cell: function (r) { return chip(r.status, r.status); }},
        {key: 'line', label: 'line', num: 1},
        {label: 'record', sort: function (r) { return r.record ? r.record.provider + r.record.shape : null; },
         cell: function (r) { return r.record ? [r.record.provider, ' ', r.record.shape, ' ', el('span', {class: 'small'}, r.record.dtype)] : JSON.stringify(r.match); }},
        {key: 'metric', label: 'metric'},
        {key: 'value', label: 'value', num: 1, cell: function (r) { return typeof r.value === 'number' ? fmt(r.value) : r.value === null || r.value === undefined ? '' : typeof r.value === 'string' ? r.value : JSON.stringify(r.value); }},
        {key: 'bound', label: 'bound'},
        {key: 'reason', label: 'reason', cell: function (r) { return [r.reason || '', r.note ? el('div', {class: 'small'}, r.note) : '']; }}]})];
  });
}

function alltoallSection() {
  return DOC.alltoall.map(function (a) {
    var s = a.summary || {};
    return [el('h3', null, a.node + ': ' + a.transport + ', ' + a.ranks + ' ranks: ', chip((s.pass || 0) + ' PASS', 'PASS'), ' ', chip((s.fail || 0) + ' FAIL', 'FAIL')),
      dataTable({id: 'alltoall-' + a.node, rows: a.points, filters: ['result', 'dtype'],
        rowClass: function (r) { return r.result === 'FAIL' ? 'bad' : null; }, columns: [
        {key: 'result', label: 'result', cell: function (r) { return chip(r.result, r.result); }},
        {key: 'dtype', label: 'dtype'}, {key: 'size_label', label: 'size', sort: function (r) { return r.size_bytes; }},
        {key: 'skew', label: 'skew', num: 1}, {key: 'p50_ms', label: 'p50 ms', num: 1, cell: function (r) { return fmt(r.p50_ms); }},
        {key: 'p99_ms', label: 'p99 ms', num: 1, cell: function (r) { return fmt(r.p99_ms); }},
        {key: 'busbw_gbps', label: 'busbw GB/s', num: 1, cell: function (r) { return fmt(r.busbw_gbps); }},
        {key: 'algbw_gbps', label: 'algbw GB/s', num: 1, cell: function (r) { return fmt(r.algbw_gbps); }},
        {key: 'wrong', label: 'wrong', num: 1}, {key: 'reason', label: 'reason'}]})];
  });
}

function nodesSection() {
  return dataTable({id: 'nodes-table', rows: DOC.nodes, filters: ['status', 'type'],
    rowData: function (n) { return {node: n.name}; },
    rowClass: function (n) { return n.status === 'failed' ? 'bad node' : 'node'; }, columns: [
    {key: 'name', label: 'node', cell: function (n) { return el('b', null, n.name); }},
    {key: 'type', label: 'type'},
    {key: 'status', label: 'status', cell: function (n) { return [chip(n.status, n.status), n.exclusive ? [' ', chip('exclusive', 'excl')] : '',
      n.verdict === 'expectations_not_met' ? [' ', chip('not met', 'failed')] : '']; }},
    {key: 'reason', label: 'reason', cell: function (n) { return [n.reason, n.error ? el('div', {class: 'bad-mark'}, n.error) : '']; }},
    {key: 'seconds', label: 'time', num: 1, cell: function (n) { return n.status === 'ran' || n.status === 'failed' ? fmtSeconds(n.seconds) : ''; }},
    {key: 'started_at', label: 'started', cell: function (n) { return n.started_at ? n.started_at.slice(11, 23) : ''; }},
    {key: 'files', label: 'files', sort: function (n) { return (n.files || []).length; }, cell: function (n) {
      // Links relative to the page (the files stay beside the run; nothing is fetched by the page itself).
      return el('span', {class: 'small'}, (n.files || []).map(function (f, i) {
        var link = DOC.run_href && n.dir ? el('a', {href: DOC.run_href + '/' + n.dir + '/' + encodeURIComponent(f.name)}, f.name) : f.name;
        return [i ? ', ' : '', link, ' (' + fmtBytes(f.bytes) + ')'];
      }));
    }},
    {key: 'digest', label: 'digest', cell: function (n) { return el('span', {class: 'mono small', title: n.digest}, (n.digest || '').slice(0, 12)); }}]});
}

function drawRun() {
  var run = DOC.run, v = verdictOf(run.exit_code);
  header(run.workflow, v, [fmtTime(run.started) + ' \u00b7 ' + fmtSeconds(run.seconds), 'aispflow ' + (run.aispflow_version || '') + ' \u00b7 ' + (run.backend || '')]);
  var c = statusCounts(DOC.nodes);
  add('summary', 'Summary', v[2], null, function () { return summarySection(run); });
  add('dag', 'Workflow DAG', (c.ran || 0) + ' ran, ' + (c.cached || 0) + ' cached, ' + (c.failed || 0) + ' failed, ' + (c.skipped || 0) + ' skipped', DOC.nodes.length, dagSection);
  add('timeline', 'Timeline', 'node start and finish from run.json', null, timelineSection);
  add('plots', 'Plots', 'every SVG the nodes wrote', DOC.plots.length, plotsSection);
  if (DOC.records.length) add('records', 'GEMM records', 'verified before timed; click a header to sort', DOC.records.length, recordsSection);
  if (DOC.compare.length) add('compare', 'Provider comparison', 'speedup over the baseline', DOC.compare.length, compareSection);
  if (DOC.expect.length) add('expect', 'Expectations', 'failures first', DOC.expect.reduce(function (s, e) { return s + e.results.length; }, 0), expectSection);
  if (DOC.alltoall.length) add('alltoall', 'All-to-all', 'PASS/FAIL per point, failures first', DOC.alltoall.length, alltoallSection);
  add('nodes', 'Nodes', 'every node of the run: status, why, files', DOC.nodes.length, nodesSection);
}

// ---- two runs compared -----------------------------------------------------------------------------------

function drawDiff() {
  var s = DOC.summary, regressions = s.regression || 0;
  header('B against A: ' + DOC.metric, regressions ? [regressions + ' REGRESSION' + (regressions > 1 ? 'S' : ''), 'bad', 'exit 3'] : ['NO REGRESSION', 'ok', 'exit 0'],
         ['tolerance ' + fmt(DOC.tolerance_pct) + ' % \u00b7 ' + DOC.better + ' is better', DOC.generator]);
  var side = function (label, r) {
    return card(label + ': ' + (r.workflow || '?'), r.dir, [fmtTime(r.started), ' \u00b7 aispflow ', r.aispflow_version || '?', ' \u00b7 ', r.backend || '',
      ' \u00b7 exit ', String(r.exit_code)]);
  };
  add('summary', 'Summary', 'records pair on provider, shape, dtype, layout and epilogue', null, function () {
    return [el('div', {class: 'split'}, side('A', DOC.a), side('B', DOC.b)), el('p', null,
      ['regression', 'improvement', 'same', 'missing', 'new', 'fixed', 'failed', 'not compared'].map(function (k) {
        return [chip((s[k] || 0) + ' ' + k, k), ' '];
      }))];
  });
  add('diff', 'Records', 'speedup = ' + (DOC.better === 'lower' ? 'A / B' : 'B / A') + ': above 1 is better', DOC.rows.length, function () {
    return dataTable({id: 'diff-table', rows: DOC.rows, filters: ['verdict', 'provider', 'dtype'],
      rowClass: function (r) { return r.verdict === 'regression' ? 'bad diff-row' : 'diff-row'; }, columns: [
      {key: 'verdict', label: 'verdict', cell: function (r) { return chip(r.verdict, r.verdict); }},
      {key: 'provider', label: 'provider'}, {key: 'shape', label: 'shape'}, {key: 'dtype', label: 'dtype'},
      {key: 'a', label: 'A ' + DOC.unit, num: 1, cell: function (r) { return r.a !== undefined ? fmt(r.a) : r.a_status; }},
      {key: 'b', label: 'B ' + DOC.unit, num: 1, cell: function (r) { return r.b !== undefined ? fmt(r.b) : r.b_status; }},
      {key: 'speedup', label: 'speedup', num: 1, cell: function (r) {
        return typeof r.speedup === 'number' ? el('span', {class: r.verdict === 'regression' ? 'bad-mark' : r.verdict === 'improvement' ? 'ok-mark' : ''}, fmt(r.speedup) + '\u00d7') : '';
      }},
      {key: 'note', label: 'note', cls: 'kernel', title: function (r) { return r.note; }}]});
  });
}

(DOC.kind === 'diff' ? drawDiff : drawRun)();
var nav = el('nav', {class: 'sections'}, NAV.map(function (n) {
  return el('a', {href: '#' + n.id}, n.title, n.count !== null && n.count !== undefined ? el('span', {class: 'n'}, n.count) : null);
}));
document.body.insertBefore(nav, APP);
var renderMs = performance.now() - T0;
APP.appendChild(el('footer', null, 'generated by ' + DOC.generator + ' at ' + fmtTime(DOC.generated) + (DOC.run_dir ? ' from ' + DOC.run_dir : '') +
  ' \u00b7 drawn in ' + renderMs.toFixed(0) + ' ms \u00b7 the data is the JSON document in this file (script#aispflow-data)'));
document.body.setAttribute('data-render-ms', renderMs.toFixed(1));
document.body.setAttribute('data-rendered', '1');
// A link to a section (report.html#records) works although the sections did not exist when the page loaded.
if (location.hash.length > 1) {
  var target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (target) target.scrollIntoView();
}
