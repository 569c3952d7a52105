/*
 * viewer.js - cuscope's trace viewer: draws the timeline of a trace on a <canvas> and lists the
 * findings of `cuscope report` beside it. Plain JavaScript, no framework, no external URL.
 *
 * The server (cuscope view) holds the trace; this page asks it for the events of the visible time
 * window, already thinned to one item per pixel column at most (GET /api/window), and for the
 * device memory counters (GET /api/memory). While the user zooms or pans, the last answer is
 * redrawn at the new scale at once, and a new window is asked for when the motion pauses.
 *
 * The server reads the timeline first and runs the rules after: GET /api/summary answers
 * "loading" until the tracks are read, and GET /api/findings "pending" until the steps and
 * findings are known. The page draws the timeline as soon as it can and shows "analysing…" in
 * the findings list until the findings come. A trace with the writer's overview is drawn before
 * its tracks are read: the summary says "overview" and the window answers are busy blocks per
 * overview bin (windows narrower than a bin per column answer 503 "loading"); the page shows
 * "loading detail…" and asks for the summary until it is "ready", then draws the detail.
 *
 * The token comes in the page's URL (?token=...), which start() then drops from the address bar; the
 * page keeps it in this tab's sessionStorage (kept apart per origin, so per port: a reload still
 * works, another viewer's page never sees it) and sends it on every API request in the
 * X-Cuscope-Token header. Never in a cookie: cookies are shared by every port of 127.0.0.1.
 *
 * Every string of the trace is shown with textContent or drawn with fillText: never innerHTML.
 * The state is exposed as window.__viewer (and data-t0/data-t1 on the canvas) for tests.
 */
'use strict';

(function () {
	const LABEL_W = 190; /* width of the track labels, CSS pixels */
	const AXIS_H = 26; /* height of the time axis */
	const ROW_H = 18; /* height of an event track */
	const MEM_H = 44; /* height of a memory track */
	const FETCH_DELAY_MS = 60; /* wait this long after the last zoom/pan before asking */
	const KIND_COLORS = ['#3b78c4', '#e08a1e', '#8d6cc9', '#d33f3f', '#8a93a3', '#2f9e8f'];
	const BUSY_COLOR = '#5f7fa8';
	const HIGHLIGHT = '#f2b300';
	const SUMMARY_POLL_MS = 20; /* ask again this soon while the server reads the trace */
	const FINDINGS_POLL_MS = 150; /* and this soon while it runs the rules */
	const DETAIL_POLL_MS = 50; /* and this soon while it draws from the overview */

	const canvas = document.getElementById('timeline');
	const scroller = document.getElementById('timeline-scroll');
	const tooltip = document.getElementById('tooltip');
	const statusEl = document.getElementById('status');
	const ctx = canvas.getContext('2d');
	const token = (() => {
		const fromUrl = new URLSearchParams(location.search).get('token');
		try {
			if (fromUrl) sessionStorage.setItem('cuscope-token', fromUrl);
			return fromUrl || sessionStorage.getItem('cuscope-token') || '';
		} catch (e) {
			return fromUrl || ''; /* storage refused: the token of the URL only */
		}
	})();

	/* Everything the page knows; tests read it. */
	const state = {
		started: performance.now(),
		summary: null,
		analysis: 'pending', /* then 'ready' or 'error' (GET /api/findings) */
		findings: [],
		steps: [],
		findingsMs: null, /* page start to the findings listed */
		t0: 0,
		t1: 1,
		window: null, /* last /api/window answer */
		memory: null, /* last /api/memory answer */
		highlight: null, /* the selected finding */
		renders: 0,
		firstRenderMs: null, /* page start to the first timeline drawn with events */
		detail: true, /* false while the tracks come from the overview */
		firstFromOverview: null, /* the first timeline was drawn from the overview */
		detailMs: null, /* page start to the first timeline drawn from the full tracks */
		lastQueryMs: null, /* round trip of the last window query */
		rows: [], /* [{track, y, h}] */
	};
	window.__viewer = state;

	let fetchTimer = null;
	let fetchSeq = 0;
	let drawQueued = false;

	/* ---- helpers ---- */

	/* A duration in ns as text: "850 ns", "12.3 us", "4.56 ms", "1.23 s". */
	function fmtDur(ns) {
		const a = Math.abs(ns);
		if (a < 1e3) return ns.toFixed(0) + ' ns';
		if (a < 1e6) return (ns / 1e3).toPrecision(3) + ' us';
		if (a < 1e9) return (ns / 1e6).toPrecision(3) + ' ms';
		return (ns / 1e9).toPrecision(3) + ' s';
	}

	function fmtBytes(b) {
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (b >= 1024 && i < units.length - 1) {
			b /= 1024;
			i++;
		}
		return (i ? b.toFixed(1) : b.toFixed(0)) + ' ' + units[i];
	}

	/* A stable colour for a name, so a kernel keeps its colour across zooms. */
	function nameColor(name) {
		let h = 0;
		for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
		const hue = ((h % 360) + 360) % 360;
		return 'hsl(' + hue + ',55%,52%)';
	}

	async function getJSON(path) {
		const r = await fetch(path, {
			headers: { 'X-Cuscope-Token': token },
			credentials: 'omit',
			cache: 'no-store',
		});
		/* 503 {"status": "loading"}: the tracks are not read yet */
		if (r.status === 503) return { status: 'loading' };
		if (!r.ok) throw new Error(path + ': HTTP ' + r.status);
		return r.json();
	}

	function plotWidth() {
		return Math.max(1, canvas.clientWidth - LABEL_W);
	}

	function xOf(t) {
		return LABEL_W + ((t - state.t0) / (state.t1 - state.t0)) * plotWidth();
	}

	function tOf(x) {
		return state.t0 + ((x - LABEL_W) / plotWidth()) * (state.t1 - state.t0);
	}

	/* ---- layout ---- */

	function layout() {
		let y = AXIS_H;
		state.rows = state.summary.tracks.map((track) => {
			const h = track.kind === 'memory' ? MEM_H : ROW_H;
			const row = { track, y, h };
			y += h + 2;
			return row;
		});
		const dpr = window.devicePixelRatio || 1;
		const w = scroller.clientWidth;
		const h = Math.max(y + 8, 120);
		canvas.style.width = w + 'px';
		canvas.style.height = h + 'px';
		canvas.width = Math.round(w * dpr);
		canvas.height = Math.round(h * dpr);
		ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	}

	/* ---- drawing ---- */

	function requestDraw() {
		if (drawQueued) return;
		drawQueued = true;
		requestAnimationFrame(() => {
			drawQueued = false;
			draw();
		});
	}

	function drawAxis(w) {
		const span = state.t1 - state.t0;
		/* a tick step of 1, 2 or 5 times a power of ten, about 100 px apart */
		const raw = span / Math.max(1, plotWidth() / 100);
		const pow = Math.pow(10, Math.floor(Math.log10(raw)));
		const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw);
		ctx.fillStyle = '#eceef2';
		ctx.fillRect(0, 0, w, AXIS_H);
		ctx.fillStyle = '#4b5463';
		ctx.strokeStyle = '#c9ced6';
		ctx.font = '11px sans-serif';
		ctx.textBaseline = 'middle';
		for (let t = Math.ceil(state.t0 / step) * step; t < state.t1; t += step) {
			const x = xOf(t);
			ctx.beginPath();
			ctx.moveTo(x + 0.5, AXIS_H - 6);
			ctx.lineTo(x + 0.5, canvas.clientHeight);
			ctx.stroke();
			ctx.fillText(fmtDur(t), x + 3, AXIS_H / 2);
		}
	}

	/* Steps shaded in alternating tones; warm-up steps hatched darker. */
	function drawSteps(h) {
		const steps = state.steps;
		for (const s of steps) {
			if (s.end < state.t0 || s.start > state.t1) continue;
			const x0 = Math.max(LABEL_W, xOf(s.start));
			const x1 = Math.min(canvas.clientWidth, xOf(s.end));
			if (x1 <= x0) continue;
			ctx.fillStyle = s.warmup ? 'rgba(120,120,120,0.16)'
				: s.index % 2 ? 'rgba(59,120,196,0.07)' : 'rgba(59,120,196,0.02)';
			ctx.fillRect(x0, AXIS_H, x1 - x0, h - AXIS_H);
			if (x1 - x0 > 40) {
				ctx.fillStyle = '#6b7382';
				ctx.fillText((s.warmup ? 'warm-up ' : 'step ') + s.index, x0 + 3, AXIS_H - 6);
			}
		}
	}

	/* labels: kernels demangled and short (names_short); names: as recorded, for the colors */
	function drawEvents(row, items, names, labels, hl) {
		const y = row.y + 1;
		const h = row.h - 2;
		for (const it of items) {
			const [start, end, name, count, , kind] = it;
			let x0 = xOf(start);
			let x1 = xOf(end);
			if (x1 < LABEL_W || x0 > canvas.clientWidth) continue;
			x0 = Math.max(LABEL_W, x0);
			x1 = Math.min(canvas.clientWidth, x1);
			const w = Math.max(1, x1 - x0);
			if (name < 0) {
				ctx.fillStyle = BUSY_COLOR; /* merged events: a busy block */
			} else if (kind === 0 || kind === 5) {
				ctx.fillStyle = nameColor(names[name]);
			} else {
				ctx.fillStyle = KIND_COLORS[kind] || BUSY_COLOR;
			}
			ctx.fillRect(x0, y, w, h);
			if (hl && end >= hl.first && start <= hl.last) {
				ctx.strokeStyle = HIGHLIGHT;
				ctx.lineWidth = 2;
				ctx.strokeRect(x0, y, w, h);
				ctx.lineWidth = 1;
			}
			if (name >= 0 && w > 40) {
				ctx.save();
				ctx.beginPath();
				ctx.rect(x0, y, w, h);
				ctx.clip();
				ctx.fillStyle = '#fff';
				ctx.fillText(labels[name], x0 + 3, y + h / 2);
				ctx.restore();
			} else if (name < 0 && w > 40) {
				ctx.fillStyle = '#fff';
				ctx.fillText(count + ' events', x0 + 3, y + h / 2);
			}
		}
	}

	function drawMemory(row, samples, peak) {
		if (!samples || samples.length === 0 || peak <= 0) return;
		const base = row.y + row.h - 2;
		const scale = (row.h - 6) / peak;
		ctx.beginPath();
		ctx.moveTo(Math.max(LABEL_W, xOf(samples[0][0])), base);
		let last = 0;
		for (const [t, v] of samples) {
			const x = Math.min(canvas.clientWidth, Math.max(LABEL_W, xOf(t)));
			ctx.lineTo(x, base - last * scale); /* a step function */
			ctx.lineTo(x, base - v * scale);
			last = v;
		}
		ctx.lineTo(canvas.clientWidth, base - last * scale);
		ctx.lineTo(canvas.clientWidth, base);
		ctx.closePath();
		ctx.fillStyle = 'rgba(47,158,143,0.35)';
		ctx.fill();
		ctx.strokeStyle = '#2f9e8f';
		ctx.stroke();
		ctx.fillStyle = '#4b5463';
		ctx.fillText('peak ' + fmtBytes(peak), LABEL_W + 4, row.y + 8);
	}

	function draw() {
		if (!state.summary) return;
		const w = canvas.clientWidth;
		const h = canvas.clientHeight;
		ctx.clearRect(0, 0, w, h);
		ctx.font = '11px sans-serif';
		ctx.textBaseline = 'middle';
		drawSteps(h);
		drawAxis(w);

		const hl = state.highlight;
		if (hl) {
			/* the finding's span, shaded across all tracks */
			const x0 = Math.max(LABEL_W, xOf(hl.first));
			const x1 = Math.min(w, xOf(hl.last));
			ctx.fillStyle = 'rgba(242,179,0,0.18)';
			ctx.fillRect(x0, AXIS_H, Math.max(2, x1 - x0), h - AXIS_H);
		}

		const byId = new Map();
		if (state.window) for (const t of state.window.tracks) byId.set(t.id, t);
		const memById = new Map();
		if (state.memory) for (const t of state.memory.tracks) memById.set(t.id, t);
		let drawn = 0;
		for (const row of state.rows) {
			ctx.fillStyle = '#f0f2f5';
			ctx.fillRect(LABEL_W, row.y + row.h + 1, w - LABEL_W, 1);
			if (row.track.kind === 'memory') {
				const m = memById.get(row.track.id);
				if (m) drawMemory(row, m.samples, m.peak);
			} else {
				const t = byId.get(row.track.id);
				if (t) {
					const w = state.window;
					drawEvents(row, t.items, w.names, w.names_short || w.names, hl);
					drawn += t.items.length;
				}
			}
			/* the label column, drawn last so that it covers what overflows */
			ctx.fillStyle = '#f6f7f9';
			ctx.fillRect(0, row.y, LABEL_W, row.h + 2);
			ctx.fillStyle = '#1d2330';
			ctx.fillText(label(row.track), 6, row.y + row.h / 2, LABEL_W - 10);
		}
		ctx.fillStyle = '#c9ced6';
		ctx.fillRect(LABEL_W - 1, 0, 1, h);

		canvas.dataset.t0 = String(Math.round(state.t0));
		canvas.dataset.t1 = String(Math.round(state.t1));
		document.getElementById('window-text').textContent =
			fmtDur(state.t0) + ' .. ' + fmtDur(state.t1) + ' (' + fmtDur(state.t1 - state.t0) + ')';
		state.renders++;
		if (state.firstRenderMs === null && state.window) {
			state.firstRenderMs = performance.now() - state.started;
			state.firstFromOverview = !!state.window.overview;
			document.body.dataset.rendered = '1';
		}
		if (state.detailMs === null && state.window && !state.window.overview) {
			state.detailMs = performance.now() - state.started;
		}
		state.itemsDrawn = drawn;
	}

	function label(track) {
		const pid = 'pid ' + track.pid + ' ';
		return pid + track.name;
	}

	/* ---- data ---- */

	/* Ask for the visible window after the motion paused (or now, with now set). */
	function scheduleFetch(now) {
		clearTimeout(fetchTimer);
		fetchTimer = setTimeout(fetchWindow, now ? 0 : FETCH_DELAY_MS);
	}

	async function fetchWindow() {
		const seq = ++fetchSeq;
		const t0 = Math.floor(state.t0);
		const t1 = Math.max(t0 + 1, Math.ceil(state.t1));
		const px = Math.round(plotWidth());
		const q = '?t0=' + t0 + '&t1=' + t1 + '&px=' + px;
		const began = performance.now();
		try {
			const [win, mem] = await Promise.all([getJSON('api/window' + q), getJSON('api/memory' + q)]);
			if (seq !== fetchSeq) return; /* a newer query is on its way */
			if (win.status === 'loading' || mem.status === 'loading') {
				/* narrower than the overview: keep the last answer until the detail is read */
				statusEl.textContent = 'loading detail…';
				requestDraw();
				return;
			}
			if (win.overview && state.detail) return; /* asked before the detail came */
			state.lastQueryMs = performance.now() - began;
			state.window = win;
			state.memory = mem;
			statusEl.textContent = (win.overview ? 'overview (loading detail…): ' : '') + describe(win) +
				' · query ' + state.lastQueryMs.toFixed(0) + ' ms';
			requestDraw();
		} catch (e) {
			statusEl.textContent = 'error: ' + e.message;
		}
	}

	function describe(win) {
		let events = 0;
		let items = 0;
		for (const t of win.tracks) {
			events += t.events;
			items += t.items.length;
		}
		return events + ' events in view, drawn as ' + items + ' items';
	}

	/* Show [t0, t1), clamped to a sane span. */
	function setWindow(t0, t1) {
		const s = state.summary;
		const full = Math.max(1, s.end - s.start);
		let span = Math.min(Math.max(t1 - t0, 1000), full * 4);
		let a = t0;
		if (a < s.start - full) a = s.start - full;
		if (a + span > s.end + full) a = s.end + full - span;
		state.t0 = a;
		state.t1 = a + span;
		requestDraw();
		scheduleFetch(false);
	}

	function showAll() {
		const s = state.summary;
		const pad = Math.max(1, (s.end - s.start) * 0.01);
		setWindow(s.start - pad, s.end + pad);
	}

	/* ---- findings ---- */

	function renderFindings() {
		const list = document.getElementById('findings');
		const findings = state.findings;
		list.textContent = '';
		if (state.analysis !== 'ready') {
			/* the rules are still running, or failed */
			const li = document.createElement('li');
			li.className = state.analysis === 'error' ? 'empty error' : 'empty pending';
			li.textContent = state.analysis === 'error' ? 'Analysis failed: ' + state.analysisError
				: 'analysing…';
			list.appendChild(li);
			document.getElementById('findings-count').textContent = '';
			document.body.dataset.analysis = state.analysis;
			return;
		}
		document.getElementById('findings-count').textContent = '(' + findings.length + ')';
		document.body.dataset.analysis = 'ready';
		if (findings.length === 0) {
			const li = document.createElement('li');
			li.className = 'empty';
			li.textContent = 'No findings.';
			list.appendChild(li);
		}
		for (const f of findings) {
			const li = document.createElement('li');
			li.className = 'sev-' + f.severity;
			li.dataset.rule = f.rule;
			li.dataset.id = String(f.id);
			const rule = document.createElement('div');
			rule.className = 'rule';
			rule.textContent = f.rule + ' · ' + f.severity +
				(f.steps.length ? ' · ' + f.steps.length + ' steps' : '');
			const title = document.createElement('div');
			title.className = 'title';
			title.textContent = f.title;
			const fix = document.createElement('div');
			fix.className = 'fix';
			fix.textContent = f.fix || '';
			li.append(rule, title, fix);
			li.addEventListener('click', () => selectFinding(f, li));
			list.appendChild(li);
		}
	}

	/* Jump to a finding's time span and highlight its events. */
	function selectFinding(f, li) {
		for (const el of document.querySelectorAll('#findings li.selected')) el.classList.remove('selected');
		li.classList.add('selected');
		document.body.dataset.highlight = String(f.id);
		if (f.first === null || f.last === null) {
			state.highlight = null;
			requestDraw();
			return;
		}
		state.highlight = { id: f.id, first: f.first, last: f.last };
		const span = Math.max(f.last - f.first, 2000);
		const pad = span * 0.1;
		setWindow(f.first - pad, f.first + span + pad);
		scheduleFetch(true);
	}

	/* ---- interaction ---- */

	canvas.addEventListener('wheel', (e) => {
		if (e.shiftKey) return; /* let the tracks scroll */
		e.preventDefault();
		const rect = canvas.getBoundingClientRect();
		const x = Math.max(LABEL_W, e.clientX - rect.left);
		const at = tOf(x);
		const factor = Math.exp((e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY) * 0.002);
		const t0 = at - (at - state.t0) * factor;
		const t1 = at + (state.t1 - at) * factor;
		setWindow(t0, t1);
	}, { passive: false });

	let drag = null;
	canvas.addEventListener('mousedown', (e) => {
		drag = { x: e.clientX, t0: state.t0, t1: state.t1 };
		canvas.classList.add('dragging');
	});
	window.addEventListener('mouseup', () => {
		drag = null;
		canvas.classList.remove('dragging');
	});
	window.addEventListener('mousemove', (e) => {
		if (drag) {
			const dt = ((e.clientX - drag.x) / plotWidth()) * (drag.t1 - drag.t0);
			setWindow(drag.t0 - dt, drag.t1 - dt);
			tooltip.hidden = true;
			return;
		}
		hover(e);
	});

	/* The item under the mouse, shown in the tooltip. */
	function hover(e) {
		const rect = canvas.getBoundingClientRect();
		const x = e.clientX - rect.left;
		const y = e.clientY - rect.top;
		tooltip.hidden = true;
		if (!state.window || x < LABEL_W || x > rect.width || y < 0 || y > rect.height) return;
		const row = state.rows.find((r) => y >= r.y && y < r.y + r.h);
		if (!row || row.track.kind === 'memory') return;
		const t = state.window.tracks.find((w) => w.id === row.track.id);
		if (!t) return;
		const at = tOf(x);
		const slack = (state.t1 - state.t0) / plotWidth() * 2;
		const it = t.items.find((i) => i[0] - slack <= at && at <= i[1] + slack);
		if (!it) return;
		const full = state.window.names_demangled || state.window.names;
		const name = it[2] >= 0 ? full[it[2]] : it[3] + ' events (busy ' + fmtDur(it[4]) + ')';
		tooltip.textContent = name + '\n' + fmtDur(it[1] - it[0]) + ' at ' + fmtDur(it[0]);
		tooltip.hidden = false;
		const pane = document.getElementById('timeline-pane').getBoundingClientRect();
		tooltip.style.left = Math.min(e.clientX - pane.left + 12, pane.width - 300) + 'px';
		tooltip.style.top = (e.clientY - pane.top + 12) + 'px';
	}

	window.addEventListener('keydown', (e) => {
		if (e.key === '0') showAll();
	});
	document.getElementById('reset').addEventListener('click', showAll);
	window.addEventListener('resize', () => {
		if (!state.summary) return;
		layout();
		requestDraw();
		scheduleFetch(false);
	});

	/* ---- start ---- */

	function sleep(ms) {
		return new Promise((resolve) => setTimeout(resolve, ms));
	}

	/* The steps and findings, asked for until the server has run the rules. */
	async function loadFindings() {
		let f;
		for (;;) {
			try {
				f = await getJSON('api/findings');
			} catch (e) {
				f = { status: 'error', error: e.message };
			}
			if (f.status !== 'pending') break;
			await sleep(FINDINGS_POLL_MS);
		}
		if (f.status === 'ready') {
			state.findings = f.findings;
			state.steps = f.steps;
			const warm = f.steps.filter((x) => x.warmup).length;
			document.getElementById('steps-text').textContent = f.steps.length + ' steps (' + warm +
				' warm-up), found by ' + f.step_method + ': ' + (f.step_detail || '');
		} else {
			state.analysisError = f.error || 'unknown error';
			document.getElementById('steps-text').textContent = '';
		}
		state.analysis = f.status === 'ready' ? 'ready' : 'error';
		state.findingsMs = performance.now() - state.started;
		renderFindings();
		requestDraw();
	}

	/* What identifies a track in both summaries (the overview's and the full one). */
	function trackKey(t) {
		return [t.kind, t.pid, t.device, t.stream, t.tid, t.depth === undefined ? '' : t.depth].join('/');
	}

	/* Show the "loading detail…" badge while the tracks come from the overview. */
	function showDetail() {
		document.getElementById('detail').hidden = state.detail;
		document.body.dataset.detail = state.detail ? 'ready' : 'loading';
	}

	/* Drawn from the overview: ask for the summary until the tracks are read, then the detail. */
	async function loadDetail() {
		let s;
		for (;;) {
			await sleep(DETAIL_POLL_MS);
			try {
				s = await getJSON('api/summary');
			} catch (e) {
				s = { status: 'error', error: e.message };
			}
			if (s.status !== 'overview' && s.status !== 'loading') break;
		}
		if (s.status !== 'ready') {
			statusEl.textContent = 'error: ' + (s.error || 'cannot read the trace');
			return;
		}
		/* the last overview answer, under the ids of the new tracks until the detail comes */
		const ids = new Map(s.tracks.map((t) => [trackKey(t), t.id]));
		if (state.window && state.window.overview) {
			const old = state.summary.tracks;
			state.window.tracks = state.window.tracks
				.filter((t) => ids.has(trackKey(old[t.id])))
				.map((t) => Object.assign({}, t, { id: ids.get(trackKey(old[t.id])) }));
		}
		state.summary = s;
		state.detail = true;
		showDetail();
		layout();
		requestDraw();
		scheduleFetch(true);
	}

	async function start() {
		/* drop the token from the address bar (and from what a screenshot or the history shows) */
		if (location.search.includes('token=')) history.replaceState(null, '', location.pathname);
		renderFindings();
		document.getElementById('steps-text').textContent = 'analysing…';
		let s;
		try {
			for (;;) {
				s = await getJSON('api/summary');
				if (s.status !== 'loading') break;
				statusEl.textContent = 'reading the trace: ' + s.loaded + ' of ' + s.events + ' events';
				await sleep(SUMMARY_POLL_MS);
			}
		} catch (e) {
			statusEl.textContent = 'error: ' + e.message;
			return;
		}
		if (s.status === 'error') {
			statusEl.textContent = 'error: ' + s.error;
			return;
		}
		state.summary = s;
		state.detail = s.status !== 'overview';
		showDetail();
		document.getElementById('trace-path').textContent = s.meta.path;
		document.title = 'cuscope view: ' + s.meta.path;
		layout();
		showAll();
		scheduleFetch(true);
		loadFindings();
		if (!state.detail) loadDetail();
	}

	start();
})();
