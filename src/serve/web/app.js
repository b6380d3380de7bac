// age2048 serve: the page's script. Four views over the JSON API of /api/; the URL's hash
// holds each view's state (#play?board=3x3&variant=expectation&seed=7&moves=LLU), so a game
// or a board can be shared and opened again. No framework, no build step.
'use strict';

const $ = (id) => document.getElementById(id);
let info = null; // /api/info

// --- helpers -----------------------------------------------------------------------------

async function api(path, options) {
  const r = await fetch(path, options);
  let body = null;
  try { body = await r.json(); } catch (e) { body = { error: `${r.status} ${r.statusText}` }; }
  if (!r.ok) throw new Error(body && body.error ? body.error : `${r.status} ${r.statusText}`);
  return body;
}

const fmt = (x) => (x === null || x === undefined ? '–' : Number(x).toFixed(6));

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v; else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function showError(id, message) {
  const e = $(id);
  e.textContent = message || '';
  e.hidden = !message;
}

function parseHash() {
  const h = location.hash.replace(/^#/, '');
  const [view, query] = h.split('?');
  return { view: view || 'play', params: new URLSearchParams(query || '') };
}

function setHash(view, params) {
  const q = new URLSearchParams(params).toString();
  history.replaceState(null, '', `#${view}${q ? '?' + q : ''}`);
}

function boards() {
  return [...new Set(info.solves.map((s) => s.board))];
}

function variantsOf(board) {
  return info.solves.filter((s) => s.board === board);
}

function fillSelect(select, values, chosen) {
  select.replaceChildren(...values.map((v) => el('option', { value: v }, v)));
  if (values.includes(chosen)) select.value = chosen;
}

// A board drawn as a grid of cells; `onCell(r, c, event)` makes it editable.
function drawGrid(grid, cells, onCell) {
  grid.style.gridTemplateColumns = `repeat(${cells[0].length}, 72px)`;
  grid.replaceChildren();
  cells.forEach((row, r) => row.forEach((t, c) => {
    const cls = t === 0 ? 'cell' : `cell ${t > 2048 ? 'tbig' : 't' + t}`;
    const cell = el('div', { class: cls, 'data-r': r, 'data-c': c }, t === 0 ? '' : t);
    if (onCell) {
      cell.addEventListener('click', (e) => onCell(r, c, e));
      cell.addEventListener('contextmenu', (e) => { e.preventDefault(); onCell(r, c, { shiftKey: true }); });
    }
    grid.append(cell);
  }));
}

// --- views -------------------------------------------------------------------------------

const views = ['play', 'analyse', 'figures', 'sql'];

function show(view) {
  for (const v of views) {
    $(`view-${v}`).hidden = v !== view;
    $(`tab-${v}`).classList.toggle('active', v === view);
  }
}

async function route() {
  const { view, params } = parseHash();
  const v = views.includes(view) ? view : 'play';
  show(v);
  if (v === 'play') await Play.open(params);
  else if (v === 'analyse') await Analyse.open(params);
  else if (v === 'figures') await Figures.open();
  else await Sql.open(params);
}

// --- Play --------------------------------------------------------------------------------

const Play = {
  board: null, variant: null, seed: 0, moves: '', game: null, busy: false, auto: null, hint: false,

  async open(params) {
    if (!params.get('board') && this.game) { this.url(); return; } // back to the game under way
    const bs = boards();
    this.board = bs.includes(params.get('board')) ? params.get('board') : (bs.includes('3x3') ? '3x3' : bs[0]);
    const vs = variantsOf(this.board).map((s) => s.variant);
    this.variant = vs.includes(params.get('variant')) ? params.get('variant') : vs[0];
    this.seed = /^\d+$/.test(params.get('seed') || '') ? params.get('seed') : String(Math.floor(Math.random() * 1e9));
    this.moves = (params.get('moves') || '').toUpperCase().replace(/[^LRUD]/g, '');
    fillSelect($('play-board'), bs, this.board);
    fillSelect($('play-variant'), vs, this.variant);
    $('play-seed').value = this.seed;
    await this.load(this.moves);
  },

  url() { setHash('play', { board: this.board, variant: this.variant, seed: this.seed, moves: this.moves }); },

  // Asks the server for the game after `moves`; on success it becomes the game shown.
  async load(moves) {
    this.busy = true;
    try {
      const q = new URLSearchParams({ board: this.board, variant: this.variant, seed: this.seed, moves });
      this.game = await api(`/api/game?${q}`);
      this.moves = this.game.moves;
      showError('play-error', '');
      this.url();
      this.render();
    } catch (e) {
      showError('play-error', e.message);
      this.stopAuto();
    } finally {
      this.busy = false;
    }
  },

  async move(letter) {
    if (this.busy || !this.game || this.game.over) return;
    const now = this.game.now;
    if (now && now[letter] === null) { // a move that changes nothing is not sent
      $('play-last').textContent = `${letter} changes nothing here`;
      return;
    }
    this.hint = false;
    await this.load(this.moves + letter);
  },

  undo() { if (this.moves) { this.stopAuto(); this.hint = false; this.load(this.moves.slice(0, -1)); } },
  step() { const b = this.game && this.game.now && this.game.now.best; if (b) this.move(b); },

  toggleAuto() {
    if (this.auto) return this.stopAuto();
    $('play-auto').classList.add('on');
    $('play-auto').textContent = 'Stop';
    const tick = async () => {
      if (!this.auto) return;
      if (!this.game || this.game.over) return this.stopAuto();
      await this.move(this.game.now.best);
      if (this.auto) this.auto = setTimeout(tick, 120);
    };
    this.auto = setTimeout(tick, 0);
  },

  stopAuto() {
    if (this.auto) clearTimeout(this.auto);
    this.auto = null;
    $('play-auto').classList.remove('on');
    $('play-auto').textContent = 'Auto-play';
  },

  render() {
    const g = this.game;
    drawGrid($('play-grid'), g.cells);
    $('play-score').textContent = g.score;
    $('play-moves').textContent = g.played;
    $('play-optimal').textContent = g.played ? `${g.optimal_moves} (${(100 * g.optimal_moves / g.played).toFixed(1)} %)` : '0';
    $('play-total-regret').textContent = fmt(g.total_regret);
    $('play-total-regret').dataset.value = g.total_regret;
    $('play-value').textContent = g.now ? fmt(g.now.value) : (g.won ? '1 (goal made)' : '0 (game over)');
    for (const d of 'LRUD') {
      const td = $(`q-${d}`);
      const q = g.now ? g.now[d] : null;
      td.textContent = q === null ? '–' : fmt(q);
      td.dataset.value = q === null ? '' : q;
      td.className = q === null ? 'invalid' : (g.now.best === d ? 'best' : '');
      $(`move-${d}`).classList.toggle('hint', this.hint && g.now && g.now.best === d);
      $(`move-${d}`).disabled = !g.now || q === null;
    }
    const last = g.history[g.history.length - 1];
    const p = $('play-last');
    p.replaceChildren();
    if (last) {
      const r = el('span', { id: 'play-regret', 'data-value': last.regret, class: last.optimal ? '' : 'regret' }, fmt(last.regret));
      p.append(`Move ${g.history.length}: ${last.move} (+${last.reward}), regret `, r,
        last.optimal ? ' — optimal' : ` — the best was ${last.best}`);
    }
    this.summary();
  },

  summary() {
    const g = this.game;
    const box = $('play-summary');
    box.hidden = !g.over;
    if (!g.over) return;
    const mistakes = g.history.map((h, i) => ({ ...h, n: i + 1 })).filter((h) => !h.optimal);
    const end = g.scored ? `score ${g.score}` : (g.won ? 'goal made' : 'goal missed');
    box.replaceChildren(
      el('h3', {}, `Game over: ${end} in ${g.played} moves`),
      el('p', {}, `${g.optimal_moves} of ${g.played} moves optimal; total regret ${fmt(g.total_regret)} ${g.unit}.`),
    );
    if (mistakes.length) {
      const list = el('ol', { id: 'play-mistakes' });
      for (const m of mistakes.slice(0, 200)) {
        const q = new URLSearchParams({ board: this.board, b: m.board });
        list.append(el('li', {}, `move ${m.n}: ${m.move} instead of ${m.best}, regret ${fmt(m.regret)} — `,
          el('a', { href: `#analyse?${q}` }, m.board)));
      }
      box.append(el('p', {}, 'Mistakes (each board opens in Analyse):'), list);
    } else {
      box.append(el('p', {}, 'No mistake: every move was optimal.'));
    }
  },

  newGame(seed) {
    this.stopAuto();
    this.seed = seed === undefined ? String(Math.floor(Math.random() * 1e9)) : seed;
    $('play-seed').value = this.seed;
    this.load('');
  },
};

// --- Analyse -----------------------------------------------------------------------------

const Analyse = {
  board: null, cells: null,

  async open(params) {
    if (!params.get('board') && this.cells) { // back to the board under way
      setHash('analyse', { board: this.board, b: $('an-text').value.trim() });
      return;
    }
    const bs = boards();
    this.board = bs.includes(params.get('board')) ? params.get('board') : (bs.includes('3x3') ? '3x3' : bs[0]);
    fillSelect($('an-board'), bs, this.board);
    const b = params.get('b');
    if (b) { $('an-text').value = b; await this.run(); } else { this.blank(); }
  },

  blank() {
    const [r, c] = this.board.split('x').map(Number);
    this.cells = Array.from({ length: r }, () => Array(c).fill(0));
    drawGrid($('an-grid'), this.cells, (i, j, e) => this.edit(i, j, e));
  },

  text() { return this.cells.map((row) => row.map((t) => (t ? t : '.')).join(' ')).join('/'); },

  edit(r, c, e) {
    const t = this.cells[r][c];
    this.cells[r][c] = e.shiftKey ? (t <= 2 ? 0 : t / 2) : (t === 0 ? 2 : Math.min(t * 2, 32768));
    $('an-text').value = this.text();
    this.run();
  },

  async run() {
    const text = $('an-text').value.trim();
    setHash('analyse', { board: this.board, b: text });
    try {
      const a = await api(`/api/analyse?${new URLSearchParams({ board: this.board, b: text })}`);
      showError('an-error', '');
      this.cells = a.cells;
      drawGrid($('an-grid'), a.cells, (i, j, e) => this.edit(i, j, e));
      $('an-head').textContent = `Board ${a.shown}: age ${a.age}` + (a.id ? `, id ${a.id} (the smallest symmetric image's code, the views' id)` : '');
      const body = $('an-table').tBodies[0];
      body.replaceChildren();
      const notes = new Set();
      for (const v of a.variants) {
        const tr = el('tr', { 'data-variant': v.variant });
        tr.append(el('td', {}, v.variant));
        if (v.error) {
          tr.append(el('td', { colspan: 6, class: 'error' }, v.error));
        } else {
          for (const d of 'LRUD') {
            const q = v[d];
            tr.append(el('td', { class: q === null ? 'invalid' : (v.best === d ? 'best' : ''), 'data-move': d, 'data-value': q === null ? '' : q }, q === null ? '–' : fmt(q)));
          }
          tr.append(el('td', { 'data-value': v.value === null ? '' : v.value, class: 'value' }, v.value === null ? '–' : fmt(v.value)));
          tr.append(el('td', {}, v.best || '–'));
        }
        if (!v.error && v.value === null) notes.add(`${v.variant}: ${v.layout}; a board the solve did not reach may get any valid move.`);
        else if (!v.state_ids) notes.add(`${v.variant}: ${v.layout}; a board counts as reachable when all its afterstates are.`);
        body.append(tr);
      }
      $('an-table').hidden = false;
      $('an-note').textContent = [...notes].join(' ');
    } catch (e) {
      showError('an-error', e.message);
      $('an-table').hidden = true;
      $('an-head').textContent = '';
    }
  },
};

// --- Figures -----------------------------------------------------------------------------

const Figures = {
  timer: null, asked: false,

  async open() {
    clearTimeout(this.timer);
    let s;
    try { s = await api('/api/figures'); } catch (e) { $('fig-status').textContent = e.message; return; }
    const lines = $('fig-lines');
    lines.textContent = s.lines.join('\n');
    lines.hidden = s.lines.length === 0 || s.status === 'current';
    $('fig-render').hidden = !s.can_render || s.status === 'rendering';
    const frame = $('fig-frame');
    if (s.status === 'current') {
      $('fig-status').textContent = `The report of this data (${s.folder}).`;
      if (frame.hidden || !frame.src.endsWith(s.page)) { frame.src = s.page; }
      frame.hidden = false;
      return;
    }
    frame.hidden = true;
    if (s.status === 'rendering') {
      $('fig-status').textContent = `Rendering the report into ${s.folder}…`;
    } else if (s.status === 'failed') {
      $('fig-status').textContent = `The report could not be rendered: ${s.error}`;
      return;
    } else if (s.can_render && !this.asked) {
      // Missing, or made from other data: render it once, showing the steps as they come.
      this.asked = true;
      $('fig-status').textContent = `The report in ${s.folder} is ${s.status}: rendering it…`;
      try { await api('/api/figures/render', { method: 'POST' }); } catch (e) { $('fig-status').textContent = e.message; return; }
    } else {
      $('fig-status').textContent = `The report in ${s.folder} is ${s.status} (run age2048 report).`;
      return;
    }
    if (parseHash().view === 'figures') this.timer = setTimeout(() => this.open(), 500);
  },

  async render() {
    this.asked = true;
    try { await api('/api/figures/render', { method: 'POST' }); } catch (e) { $('fig-status').textContent = e.message; }
    $('fig-frame').hidden = true;
    this.open();
  },
};

// --- SQL ---------------------------------------------------------------------------------

const Sql = {
  result: null, examples: null,

  async open(params) {
    if (!this.examples) {
      this.examples = await api('/api/sql/examples');
      $('sql-examples').replaceChildren(...this.examples.map((x, i) => el('button', {
        'data-example': i, title: x.query,
        onclick: () => { $('sql-text').value = x.query; this.run(); },
      }, x.title)));
    }
    const q = params.get('q');
    if (q && q !== $('sql-text').value) { $('sql-text').value = q; this.run(); }
  },

  async run() {
    const query = $('sql-text').value;
    setHash('sql', { q: query });
    $('sql-run').disabled = true;
    $('sql-info').textContent = 'running…';
    try {
      const r = await api('/api/sql', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ query }),
      });
      this.result = r;
      showError('sql-error', '');
      this.table(r);
      $('sql-info').textContent = `${r.rows.length} row${r.rows.length === 1 ? '' : 's'} in ${r.elapsed_ms.toFixed(0)} ms`;
      $('sql-note').textContent = r.note || '';
      $('sql-csv').disabled = false;
    } catch (e) {
      this.result = null;
      showError('sql-error', e.message);
      $('sql-result').replaceChildren();
      $('sql-info').textContent = '';
      $('sql-note').textContent = '';
      $('sql-csv').disabled = true;
    } finally {
      $('sql-run').disabled = false;
    }
  },

  cell(v) { return v === null ? '' : (typeof v === 'object' ? JSON.stringify(v) : String(v)); },

  table(r) {
    const t = $('sql-result');
    t.replaceChildren(el('thead', {}, el('tr', {}, ...r.columns.map((c) => el('th', {}, c)))));
    const body = el('tbody');
    for (const row of r.rows) {
      body.append(el('tr', {}, ...row.map((v) => el('td', { class: typeof v === 'number' ? 'num' : '' }, this.cell(v)))));
    }
    t.append(body);
  },

  csv() {
    if (!this.result) return;
    const q = (s) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
    const lines = [this.result.columns.map(q).join(',')]
      .concat(this.result.rows.map((row) => row.map((v) => q(this.cell(v))).join(',')));
    const a = el('a', { href: URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'text/csv' })), download: 'query.csv' });
    document.body.append(a);
    a.click();
    a.remove();
  },
};

// --- wiring ------------------------------------------------------------------------------

function keys() {
  const moves = { ArrowLeft: 'L', ArrowRight: 'R', ArrowUp: 'U', ArrowDown: 'D', a: 'L', d: 'R', w: 'U', s: 'D', h: 'L', l: 'R', k: 'U', j: 'D' };
  document.addEventListener('keydown', (e) => {
    if (parseHash().view !== 'play' || e.ctrlKey || e.metaKey || e.altKey) return;
    if (['INPUT', 'SELECT', 'TEXTAREA'].includes(document.activeElement.tagName)) return;
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (moves[k]) { e.preventDefault(); Play.stopAuto(); Play.move(moves[k]); }
    else if (k === 'u' || k === 'Backspace') { e.preventDefault(); Play.undo(); }
    else if (k === 'n') Play.step();
    else if (k === 'p') Play.toggleAuto();
  });
  // Swipes on the board.
  let start = null;
  const grid = $('play-grid');
  grid.addEventListener('touchstart', (e) => { start = e.touches[0]; }, { passive: true });
  grid.addEventListener('touchend', (e) => {
    if (!start) return;
    const t = e.changedTouches[0];
    const dx = t.clientX - start.clientX, dy = t.clientY - start.clientY;
    start = null;
    if (Math.max(Math.abs(dx), Math.abs(dy)) < 24) return;
    Play.move(Math.abs(dx) > Math.abs(dy) ? (dx > 0 ? 'R' : 'L') : (dy > 0 ? 'D' : 'U'));
  });
}

function wire() {
  for (const b of document.querySelectorAll('[data-move]')) {
    if (b.tagName === 'BUTTON') b.addEventListener('click', () => { Play.stopAuto(); Play.move(b.dataset.move); });
  }
  $('play-new').addEventListener('click', () => Play.newGame());
  $('play-replay').addEventListener('click', () => Play.newGame($('play-seed').value || '0'));
  $('play-seed').addEventListener('change', () => Play.newGame(String(Math.max(0, parseInt($('play-seed').value, 10) || 0))));
  $('play-board').addEventListener('change', () => {
    Play.board = $('play-board').value;
    const vs = variantsOf(Play.board).map((s) => s.variant);
    fillSelect($('play-variant'), vs, Play.variant);
    Play.variant = $('play-variant').value;
    Play.newGame(Play.seed);
  });
  $('play-variant').addEventListener('change', () => { Play.variant = $('play-variant').value; Play.newGame(Play.seed); });
  $('play-hint').addEventListener('click', () => { Play.hint = !Play.hint; if (Play.game) Play.render(); });
  $('play-undo').addEventListener('click', () => Play.undo());
  $('play-step').addEventListener('click', () => { Play.stopAuto(); Play.step(); });
  $('play-auto').addEventListener('click', () => Play.toggleAuto());

  $('an-go').addEventListener('click', () => Analyse.run());
  $('an-text').addEventListener('keydown', (e) => { if (e.key === 'Enter') Analyse.run(); });
  $('an-clear').addEventListener('click', () => { $('an-text').value = ''; Analyse.blank(); setHash('analyse', { board: Analyse.board }); });
  $('an-board').addEventListener('change', () => { Analyse.board = $('an-board').value; $('an-text').value = ''; Analyse.blank(); });

  $('fig-render').addEventListener('click', () => Figures.render());

  $('sql-run').addEventListener('click', () => Sql.run());
  $('sql-text').addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); Sql.run(); } });
  $('sql-csv').addEventListener('click', () => Sql.csv());
  keys();
}

async function main() {
  wire();
  try {
    info = await api('/api/info');
  } catch (e) {
    showError('fatal', e.message);
    return;
  }
  $('solves').textContent = `${info.solves.length} solves in ${info.data}`;
  window.addEventListener('hashchange', route);
  await route();
  document.body.dataset.ready = 'true';
}

main();
