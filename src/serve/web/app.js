// age2048 serve: the page's script. Six views over the JSON API of /api/; the URL's hash
// holds each view's state (#play?board=3x3&variant=expectation&seed=7&moves=LLU,
// #analyse?board=3x3&b=…, #evaluate?board=3x3&variant=…&log=…), so a game, a board or a
// game log can be shared and opened again. No framework, no build step.
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

// What a move loses against the best one (`best`: the state value), and the class that
// colours it: best (within query::play's tolerance, a billionth of the value), under 1 %,
// under 5 %, 5 % or more of the value's size.
function lossOf(q, best) {
  if (q === null || q === undefined || best === null || best === undefined) return null;
  const l = best - q;
  return l <= 1e-9 * Math.max(Math.abs(best), 1) ? 0 : l;
}

function lossClass(l, best) {
  if (l === null) return '';
  if (l === 0) return 'l-best';
  const r = l / Math.max(Math.abs(best), 1e-12);
  return r < 0.01 ? 'l-inacc' : (r < 0.05 ? 'l-mistake' : 'l-blunder');
}

// A move's cell: its q-value, and below it what it loses, coloured.
function moveCell(d, q, value, best) {
  if (q === null || q === undefined) return el('td', { class: 'invalid', 'data-move': d, 'data-value': '' }, el('span', { class: 'qv' }, '–'));
  const l = lossOf(q, value);
  const td = el('td', { class: `${lossClass(l, value)}${best === d ? ' best' : ''}`, 'data-move': d, 'data-value': q, 'data-loss': l === null ? '' : l },
    el('span', { class: 'qv' }, fmt(q)));
  if (l !== null) td.append(el('span', { class: 'loss' }, l === 0 ? 'best' : `−${fmt(l)}`));
  return td;
}

// One row a variant of `analyse`'s answer: the four moves coloured by their loss, the value,
// (and the best move if `withBest`).
function variantRow(v, withBest) {
  const tr = el('tr', { 'data-variant': v.variant });
  tr.append(el('td', {}, v.variant));
  if (v.error) {
    tr.append(el('td', { colspan: withBest ? 6 : 5, class: 'error' }, v.error));
    return tr;
  }
  for (const d of 'LRUD') tr.append(moveCell(d, v[d], v.value, v.best));
  tr.append(el('td', { 'data-value': v.value === null ? '' : v.value, class: 'value' }, el('span', { class: 'qv' }, v.value === null ? '–' : fmt(v.value))));
  if (withBest) tr.append(el('td', {}, v.best || '–'));
  return tr;
}

// A bar chart (inline SVG) of `values` by `labels`.
function barChart(labels, values, title) {
  const ns = 'http://www.w3.org/2000/svg';
  const w = 640, h = 180, pad = 30;
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', w); svg.setAttribute('height', h + 24);
  svg.setAttribute('role', 'img'); svg.setAttribute('aria-label', title);
  const top = Math.max(...values, 1e-12);
  const bw = (w - pad) / Math.max(values.length, 1);
  values.forEach((v, i) => {
    const r = document.createElementNS(ns, 'rect');
    const bh = (h - 10) * v / top;
    r.setAttribute('x', pad + i * bw); r.setAttribute('y', h - bh); r.setAttribute('width', Math.max(bw - 1, 1)); r.setAttribute('height', bh);
    r.setAttribute('fill', '#f59563');
    r.setAttribute('data-age', labels[i]); r.setAttribute('data-value', v);
    const t = document.createElementNS(ns, 'title');
    t.textContent = `age ${labels[i]}: ${fmt(v)}`;
    r.append(t);
    svg.append(r);
  });
  const text = (x, y, s, anchor) => {
    const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', x); t.setAttribute('y', y); t.setAttribute('font-size', 11); t.setAttribute('text-anchor', anchor || 'start');
    t.textContent = s;
    svg.append(t);
  };
  text(2, 12, fmt(top));
  text(pad, h + 16, `age ${labels[0]}`);
  text(w - 2, h + 16, `age ${labels[labels.length - 1]}`, 'end');
  return svg;
}

// A board text a game can start from (two 2 tiles on the first row), for examples.
function startText(board) {
  const [r, c] = board.split('x').map(Number);
  return Array.from({ length: r }, (_, i) => Array.from({ length: c }, (_, j) => (i === 0 && j < 2 ? '2' : '.')).join(' ')).join('/');
}

// --- views -------------------------------------------------------------------------------

const views = ['play', 'analyse', 'evaluate', 'figures', 'sql', 'api'];

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
  else if (v === 'evaluate') await Evaluate.open(params);
  else if (v === 'figures') await Figures.open();
  else if (v === 'api') Api.open();
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
    const g = this.game;
    if (!g.valid.includes(letter)) { // a move that changes nothing is not sent
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
    $('play-total-regret').textContent = g.values ? fmt(g.total_regret) : 'not known (policy layout: moves only)';
    $('play-total-regret').dataset.value = g.total_regret === null ? '' : g.total_regret;
    $('play-value').textContent = g.now ? (g.values ? fmt(g.now.value) : 'not known (policy layout: moves only)') : (g.won ? '1 (goal made)' : '0 (game over)');
    $('play-note').textContent = g.values ? '' : g.note;
    for (const d of 'LRUD') {
      const td = $(`q-${d}`);
      const q = g.now ? g.now[d] : null;
      const l = g.now ? lossOf(q, g.now.value) : null;
      td.replaceChildren(el('span', { class: 'qv' }, q === null ? '–' : fmt(q)));
      if (l !== null) td.append(el('span', { class: 'loss' }, l === 0 ? 'best' : `−${fmt(l)}`));
      td.dataset.value = q === null ? '' : q;
      td.dataset.loss = l === null ? '' : l;
      td.className = q === null ? 'invalid' : `${lossClass(l, g.now.value)}${g.now.best === d ? ' best' : ''}`;
      $(`move-${d}`).classList.toggle('hint', this.hint && g.now && g.now.best === d);
      $(`move-${d}`).disabled = !g.valid.includes(d);
      if (!g.values && g.valid.includes(d)) {
        // Moves only: the stored move is marked, the others are valid moves of unknown value.
        td.className = g.now.best === d ? 'l-best best' : '';
        if (g.now.best === d) td.append(el('span', { class: 'loss' }, 'stored'));
      }
    }
    const last = g.history[g.history.length - 1];
    const p = $('play-last');
    p.replaceChildren();
    if (last && !g.values) {
      p.append(`Move ${g.history.length}: ${last.move} (+${last.reward}) — `,
        last.optimal ? 'the stored move' : `the stored move was ${last.best === null ? 'not known' : last.best}`);
    } else if (last) {
      const r = el('span', { id: 'play-regret', 'data-value': last.regret, class: last.optimal ? '' : 'regret' }, fmt(last.regret));
      p.append(`Move ${g.history.length}: ${last.move} (+${last.reward}), regret `, r,
        last.optimal ? ' — optimal' : ` — the best was ${last.best}`);
    }
    const hist = $('play-history');
    hist.replaceChildren(...g.history.map((h, i) => {
      const best = h.q ? h.q[h.best === null ? 0 : 'LRUD'.indexOf(h.best)] : null;
      const l = h.optimal ? 0 : h.regret;
      const cls = h.regret === null ? (h.optimal ? 'l-best' : 'l-blunder') : lossClass(l, best);
      return el('li', { class: cls, 'data-regret': h.regret, title: `${h.board}: ${h.move}, best ${h.best}` },
        `${i + 1}. ${h.move}${h.optimal ? '' : ` −${fmt(h.regret)}`}`);
    }));
    hist.scrollTop = hist.scrollHeight;
    this.variants();
    this.summary();
  },

  // The board now under every variant solved of its size, side by side.
  async variants() {
    const g = this.game;
    const body = $('play-variants').tBodies[0];
    if (!g || g.over) { body.replaceChildren(); return; }
    const text = g.text;
    try {
      const a = await api(`/api/analyse?${new URLSearchParams({ board: this.board, b: text })}`);
      if (this.game !== g) return; // a newer board is shown
      body.replaceChildren(...a.variants.map((v) => variantRow(v, false)));
      body.dataset.board = text;
    } catch (e) {
      body.replaceChildren(el('tr', {}, el('td', { colspan: 6, class: 'error' }, e.message)));
    }
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
      el('p', {}, g.values ? `${g.optimal_moves} of ${g.played} moves optimal; total regret ${fmt(g.total_regret)} ${g.unit}.`
        : `${g.optimal_moves} of ${g.played} moves the stored one (policy layout: moves only, no regret known).`),
    );
    if (mistakes.length) {
      const list = el('ol', { id: 'play-mistakes' });
      for (const m of mistakes.slice(0, 200)) {
        const q = new URLSearchParams({ board: this.board, b: m.board });
        list.append(el('li', {}, `move ${m.n}: ${m.move} instead of ${m.best}${m.regret === null ? '' : `, regret ${fmt(m.regret)}`} — `,
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
        const tr = variantRow(v, true);
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

// --- Evaluate ----------------------------------------------------------------------------

// The longest log kept in the URL (a longer one is evaluated, but not shared by its link).
const URL_LOG = 4000;

const Evaluate = {
  board: null, variant: null, result: null,

  async open(params) {
    const bs = boards();
    if (!params.get('board') && this.board) { this.url(); return; } // back to the log under way
    this.board = bs.includes(params.get('board')) ? params.get('board') : (bs.includes('3x3') ? '3x3' : bs[0]);
    const vs = variantsOf(this.board).map((s) => s.variant);
    this.variant = vs.includes(params.get('variant')) ? params.get('variant') : vs[0];
    fillSelect($('ev-board'), bs, this.board);
    fillSelect($('ev-variant'), vs, this.variant);
    const log = params.get('log');
    if (log) { $('ev-log').value = log; await this.run(); }
  },

  url() {
    const log = $('ev-log').value;
    const p = { board: this.board, variant: this.variant };
    if (log.trim() && log.length <= URL_LOG) p.log = log;
    setHash('evaluate', p);
  },

  async run() {
    const log = $('ev-log').value;
    this.url();
    $('ev-go').disabled = true;
    $('ev-info').textContent = 'evaluating…';
    try {
      const q = new URLSearchParams({ board: this.board, variant: this.variant });
      const r = await api(`/api/evaluate?${q}`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ log }),
      });
      this.result = r;
      showError('ev-error', '');
      this.render(r);
      $('ev-info').textContent = log.length > URL_LOG ? 'the log is too long to be kept in the URL' : '';
    } catch (e) {
      this.result = null;
      showError('ev-error', e.message);
      $('ev-result').hidden = true;
      $('ev-info').textContent = '';
    } finally {
      $('ev-go').disabled = false;
    }
  },

  render(r) {
    const unit = r.unit;
    const row = (k, v, id) => el('tr', {}, el('th', {}, k), el('td', id ? { id, 'data-value': v === null ? '' : v } : {}, v === null ? 'not known (policy layout: moves only)' : v));
    const pct = (x) => `${(100 * x).toFixed(2)} %`;
    $('ev-summary').replaceChildren(
      row('board, variant', `${r.board} ${r.variant} (${r.layout})`),
      row('games', r.games, 'ev-games'),
      row('moves', r.moves + (r.skipped ? ` (${r.skipped} after the goal tile not evaluated)` : ''), 'ev-n'),
      row('optimal moves', pct(r.optimal_share), 'ev-optimal'),
      row(`mean regret (${unit} per move)`, r.mean_regret === null ? null : fmt(r.mean_regret), 'ev-mean'),
      row(`mean total regret (${unit} per game)`, r.mean_game_regret === null ? null : fmt(r.mean_game_regret), 'ev-game-mean'),
    );
    $('ev-summary').querySelector('#ev-mean').dataset.value = r.mean_regret === null ? '' : r.mean_regret;
    $('ev-summary').querySelector('#ev-game-mean').dataset.value = r.mean_game_regret === null ? '' : r.mean_game_regret;
    const chart = $('ev-chart');
    chart.replaceChildren();
    if (r.values) {
      chart.append(barChart(r.ages.map((a) => a.age), r.ages.map((a) => a.mean_regret), 'mean regret per age'));
      const t = el('table', { class: 'result', id: 'ev-ages' }, el('thead', {}, el('tr', {}, ...['age', 'moves', 'optimal', 'mean regret', 'largest regret'].map((h) => el('th', {}, h)))));
      const body = el('tbody');
      for (const a of r.ages) {
        body.append(el('tr', { 'data-age': a.age }, el('td', { class: 'num' }, a.age), el('td', { class: 'num' }, a.moves),
          el('td', { class: 'num' }, pct(a.optimal_share)), el('td', { class: 'num', 'data-value': a.mean_regret }, fmt(a.mean_regret)),
          el('td', { class: 'num' }, fmt(a.max_regret))));
      }
      t.append(body);
      chart.append(el('details', {}, el('summary', {}, 'the table'), t));
    } else {
      chart.append(el('p', { class: 'muted' }, 'No regret is known over a policy solve: moves only.'));
    }
    const link = (m) => el('a', { href: `#analyse?${new URLSearchParams({ board: r.board, b: m.board })}` }, m.board);
    const mistakes = r.rows.filter((m) => !m.optimal);
    $('ev-mistakes').replaceChildren(...mistakes.slice(0, 500).map((m) => el('li', { class: lossClass(m.regret, m.best_q), 'data-line': m.line },
      `game ${m.game}, move ${m.step} (line ${m.line}): ${m.move} instead of ${m.best}${m.regret === null ? '' : `, regret ${fmt(m.regret)} ${unit}`} — `, link(m))));
    if (!mistakes.length) $('ev-mistakes').append(el('li', {}, 'No mistake: every move was optimal.'));
    const t = $('ev-moves');
    t.replaceChildren(el('thead', {}, el('tr', {}, ...['line', 'game', 'move', 'board', 'age', 'played', 'best', 'q', 'best q', 'regret'].map((h) => el('th', {}, h)))));
    const body = el('tbody');
    for (const m of r.rows) {
      const cls = m.regret === null ? (m.optimal ? 'l-best' : 'l-blunder') : lossClass(m.optimal ? 0 : m.regret, m.best_q);
      body.append(el('tr', { class: cls, 'data-line': m.line },
        el('td', { class: 'num' }, m.line), el('td', {}, m.game), el('td', { class: 'num' }, m.step), el('td', {}, link(m)),
        el('td', { class: 'num' }, m.age), el('td', {}, m.move), el('td', {}, m.best),
        el('td', { class: 'num' }, fmt(m.q)), el('td', { class: 'num' }, fmt(m.best_q)),
        el('td', { class: 'num regret', 'data-value': m.regret === null ? '' : m.regret }, fmt(m.regret))));
    }
    t.append(body);
    $('ev-result').hidden = false;
  },

  async drop(file) {
    $('ev-log').value = await file.text();
    await this.run();
  },
};

// --- API ---------------------------------------------------------------------------------

const Api = {
  open() {
    const board = boards().includes('3x3') ? '3x3' : boards()[0];
    for (const a of document.querySelectorAll('#api-routes a.example')) {
      const path = a.dataset.path.replace('{board}', encodeURIComponent(board)).replace('{text}', encodeURIComponent(startText(board)));
      a.href = path;
      a.textContent = decodeURIComponent(path);
    }
    const s = info.sql;
    $('api-limits').textContent = `Limits of this server: request bodies ${s.max_body_bytes / 1024} KiB (game logs ${s.max_log_bytes / 1048576} MiB); a query runs at most ${s.timeout_s} s on one of ${s.workers} connections and answers at most ${s.max_rows} rows and ${s.max_reply_bytes / 1048576} MiB.`;
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
    else if (k === 'n' || k === ' ') { e.preventDefault(); Play.stopAuto(); Play.step(); }
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

  $('ev-go').addEventListener('click', () => Evaluate.run());
  $('ev-clear').addEventListener('click', () => { $('ev-log').value = ''; $('ev-result').hidden = true; showError('ev-error', ''); Evaluate.url(); });
  $('ev-board').addEventListener('change', () => {
    Evaluate.board = $('ev-board').value;
    const vs = variantsOf(Evaluate.board).map((s) => s.variant);
    fillSelect($('ev-variant'), vs, Evaluate.variant);
    Evaluate.variant = $('ev-variant').value;
    Evaluate.url();
  });
  $('ev-variant').addEventListener('change', () => { Evaluate.variant = $('ev-variant').value; Evaluate.url(); });
  const drop = $('ev-log');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('drop'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('drop'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('drop');
    const f = e.dataTransfer && e.dataTransfer.files[0];
    if (f) Evaluate.drop(f);
  });
  $('ev-log').addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); Evaluate.run(); } });

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
