// aispflow report, part 1 of 2: small DOM helpers, number formats and the sortable, filterable table.
// Everything is built with textContent and attributes, never innerHTML: names and reasons come from YAML files
// and command output, and must stay text.
'use strict';

var SVG_NS = 'http://www.w3.org/2000/svg';
var STATUS_COLOURS = {
  ran: ['#d3f9d8', '#2b8a3e'], cached: ['#d0ebff', '#1971c2'],
  failed: ['#ffe3e3', '#c92a2a'], skipped: ['#f1f3f5', '#868e96']
};

// el('div', {class: 'x', text: 'y', title: 't', data: {k: v}}, child, ...): children may be nodes, strings or arrays.
function el(tag, attrs) {
  var node = document.createElement(tag);
  setAttrs(node, attrs);
  for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
  return node;
}
function svg(tag, attrs) {
  var node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
  return node;
}
function setAttrs(node, attrs) {
  if (!attrs) return;
  Object.keys(attrs).forEach(function (k) {
    var v = attrs[k];
    if (v === undefined || v === null || v === false) return;
    if (k === 'text') node.textContent = v;
    else if (k === 'data') Object.keys(v).forEach(function (d) { node.setAttribute('data-' + d, v[d]); });
    else if (k === 'onclick') node.addEventListener('click', v);
    else node.setAttribute(k, v);
  });
}
function append(node, child) {
  if (child === undefined || child === null || child === false) return;
  if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
  node.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
}
function chip(text, kind, title) {
  return el('span', {class: 'chip ' + String(kind || text).replace(/[^A-Za-z_-]/g, '-'), title: title}, text);
}

// Four significant digits, no exponent for ordinary magnitudes: 1234, 12.34, 0.001234.
function fmt(v) {
  if (typeof v !== 'number' || !isFinite(v)) return v === undefined || v === null ? '' : String(v);
  var a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 1e6 || a < 1e-4) return v.toExponential(3);
  if (a >= 1000) return Math.round(v).toString();
  return parseFloat(v.toPrecision(4)).toString();
}
function fmtSeconds(s) {
  if (typeof s !== 'number') return '';
  if (s === 0) return '0 s';
  if (s < 1) return (s * 1000).toFixed(s < 0.01 ? 2 : 0) + ' ms';
  if (s < 120) return s.toFixed(s < 10 ? 2 : 1) + ' s';
  return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
}
function fmtBytes(b) {
  var units = ['B', 'KiB', 'MiB', 'GiB'];
  for (var u = 0; u < units.length; u++, b /= 1024) if (b < 1024 || u === units.length - 1) return (u ? b.toFixed(1) : b) + ' ' + units[u];
}
function fmtTime(iso) {
  var d = iso ? new Date(iso) : null;
  return d && !isNaN(d) ? d.toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC') : (iso || '');
}
function mark(flag) {
  if (flag === true) return el('span', {class: 'ok-mark', title: 'verified'}, '\u2713');
  if (flag === false) return el('span', {class: 'bad-mark', title: 'not verified'}, '\u2717');
  return el('span', {class: 'none-mark'}, '\u2013');
}
function pctBar(pct) {
  if (typeof pct !== 'number') return '';
  var cls = pct >= 70 ? 'bar hi' : pct < 25 ? 'bar lo' : 'bar';
  return [el('span', {class: cls}, el('i', {style: 'width:' + Math.max(0, Math.min(100, pct)).toFixed(1) + '%'})),
          el('span', {class: 'pctv'}, fmt(pct) + ' %')];
}
function section(id, title, sub) {
  var s = el('section', {class: 'panel', id: id}, el('h2', null, title, sub ? el('span', {class: 'sub'}, sub) : null));
  return s;
}
function empty(text) { return el('div', {class: 'empty'}, text); }
function countBy(rows, key) {
  var c = {};
  rows.forEach(function (r) { var k = typeof key === 'function' ? key(r) : r[key]; c[k] = (c[k] || 0) + 1; });
  return c;
}
function uniq(values) {
  var seen = {}, out = [];
  values.forEach(function (v) { if (v !== undefined && v !== '' && !seen[v]) { seen[v] = 1; out.push(v); } });
  return out.sort();
}

// A table people can sort (click a header; again to reverse) and filter (free text over every cell, plus one
// select per `filters` column). columns: [{key, label, num, cell(row) -> node|string, sort(row), cls, title}].
// Every row is in the DOM; filtering hides rows, sorting reorders them.
function dataTable(opts) {
  var columns = opts.columns, rows = opts.rows;
  var wrap = el('div', {class: 'table-block', id: opts.id});
  var search = el('input', {type: 'search', placeholder: 'filter ' + rows.length + ' rows\u2026', 'aria-label': 'filter'});
  var count = el('span', {class: 'count'});
  var toolbar = el('div', {class: 'toolbar'}, search);
  var selects = (opts.filters || []).map(function (f) {
    var values = uniq(rows.map(function (r) { return String(r[f] === undefined ? '' : r[f]); }));
    var s = el('select', {'aria-label': f}, el('option', {value: ''}, 'all ' + f),
               values.map(function (v) { return el('option', {value: v}, v); }));
    toolbar.appendChild(s);
    return {key: f, node: s};
  });
  toolbar.appendChild(count);
  var headRow = el('tr');
  var table = el('table', {class: 'data'}, el('thead', null, headRow));
  var body = el('tbody');
  table.appendChild(body);
  var items = rows.map(function (r) {
    var tr = el('tr', {class: opts.rowClass ? opts.rowClass(r) : null, data: opts.rowData ? opts.rowData(r) : null});
    var text = [];
    columns.forEach(function (c) {
      var v = c.cell ? c.cell(r) : r[c.key];
      var td = el('td', {class: (c.num ? 'num ' : '') + (c.cls || ''), title: c.title ? c.title(r) : null}, v);
      text.push(td.textContent);
      tr.appendChild(td);
    });
    return {row: r, tr: tr, text: text.join(' ').toLowerCase()};
  });
  var frag = document.createDocumentFragment();
  items.forEach(function (it) { frag.appendChild(it.tr); });
  body.appendChild(frag);
  var sortState = {col: -1, dir: 1};
  columns.forEach(function (c, ci) {
    var th = el('th', {class: c.num ? 'num' : null, title: c.help || 'sort by ' + c.label}, c.label, el('span', {class: 'arrow'}));
    th.addEventListener('click', function () { sortBy(ci); });
    headRow.appendChild(th);
  });
  function keyOf(c, r) {
    var v = c.sort ? c.sort(r) : r[c.key];
    return v === undefined || v === null || v === '' ? null : v;
  }
  function sortBy(ci) {
    sortState.dir = sortState.col === ci ? -sortState.dir : (columns[ci].num ? -1 : 1);
    sortState.col = ci;
    var c = columns[ci], dir = sortState.dir;
    items.sort(function (a, b) {
      var x = keyOf(c, a.row), y = keyOf(c, b.row);
      if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;   // blanks last, either way
      return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), undefined, {numeric: true})) * dir;
    });
    var f = document.createDocumentFragment();
    items.forEach(function (it) { f.appendChild(it.tr); });
    body.appendChild(f);
    Array.prototype.forEach.call(headRow.children, function (th, i) {
      th.lastChild.textContent = i === ci ? (dir > 0 ? '\u25b2' : '\u25bc') : '';
    });
  }
  function applyFilter() {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
    items.forEach(function (it) {
      var ok = words.every(function (w) { return it.text.indexOf(w) >= 0; }) &&
               selects.every(function (s) { return !s.node.value || String(it.row[s.key]) === s.node.value; });
      it.tr.hidden = !ok;
      shown += ok;
    });
    count.textContent = shown === items.length ? items.length + ' rows' : shown + ' of ' + items.length + ' rows';
  }
  var timer = null;
  search.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(applyFilter, 120); });
  selects.forEach(function (s) { s.node.addEventListener('change', applyFilter); });
  count.textContent = items.length + ' rows';
  append(wrap, [rows.length > 12 || opts.filters ? toolbar : null, el('div', {class: 'scroll table-wrap'}, table)]);
  return wrap;
}

// An SVG written by a node, made safe to inline: no scripts, event handlers or outside references, and its ids
// prefixed so two plots' clip paths cannot collide. Returns the element, or null when it is not an SVG.
function inlineSvg(text, prefix) {
  var parsed = new DOMParser().parseFromString(text, 'image/svg+xml');
  var root = parsed.documentElement;
  if (!root || root.nodeName !== 'svg' || parsed.getElementsByTagName('parsererror').length) return null;
  var fixRefs = function (v) {
    return v.replace(/url\(\s*#([^)\s]+)\s*\)/g, 'url(#' + prefix + '$1)');
  };
  var all = [root].concat(Array.prototype.slice.call(root.getElementsByTagName('*')));
  all.forEach(function (node) {
    var name = node.localName;
    if (name === 'script' || name === 'foreignObject' || name === 'iframe') { node.parentNode && node.parentNode.removeChild(node); return; }
    if (name === 'style') node.textContent = fixRefs(node.textContent.replace(/@import[^;]*;?/g, '').replace(/url\(\s*['"]?(?!#)[^)]*\)/g, 'none'));
    Array.prototype.slice.call(node.attributes).forEach(function (a) {
      var n = a.name.toLowerCase();
      if (n.indexOf('on') === 0) node.removeAttribute(a.name);
      else if (n === 'href' || n === 'xlink:href') {
        if (a.value.charAt(0) === '#') node.setAttribute(a.name, '#' + prefix + a.value.slice(1));
        else node.removeAttribute(a.name);
      } else if (n === 'id') node.setAttribute('id', prefix + a.value);
      else if (a.value.indexOf('url(') >= 0) node.setAttribute(a.name, fixRefs(a.value).replace(/url\(\s*['"]?(?!#)[^)]*\)/g, 'none'));
    });
  });
  var w = parseFloat(root.getAttribute('width')), h = parseFloat(root.getAttribute('height'));
  if (!root.getAttribute('viewBox') && w > 0 && h > 0) root.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
  if (w > 0) root.setAttribute('style', 'max-width:' + w + 'px');
  root.removeAttribute('width');
  root.removeAttribute('height');
  return document.importNode(root, true);
}
