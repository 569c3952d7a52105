/*
 * viewer.js - cuscope's trace viewer: draws the timeline of a trace on a <canvas> and lists the
 * findings of `cuscope report` beside it, with the details of the clicked event and the totals of
 * a selected range. Plain JavaScript, no framework, no external URL.
 *
 * The server (cuscope view) holds the trace; this page asks it for the events of the visible time
 * window, already thinned to one item per pixel column at most (GET /api/window, with the
 * launch-to-GPU arrows of the window when it holds few enough GPU events), and for the device
 * memory counters (GET /api/memory). While the user zooms or pans, the last answer is redrawn at
 * the new scale at once, and a new window is asked for when the motion pauses. A click asks for
 * the event's stored fields (GET /api/event), a range selection for its totals (GET /api/range),
 * the search box for the next match (GET /api/search).
 *
 * The server reads the timeline first and runs the rules after: GET /api/summary answers
 * "loading" until the tracks are read, and GET /api/findings "pending" until the steps and
 * findings are known. The page draws the timeline as soon as it can and shows "analysing…" in
 * the findings list until the findings come; then, unless the user moved the view already, it
 * frames the steady-state steps. A trace with the writer's overview is drawn before its tracks
 * are read: the summary says "overview" and the window answers are busy blocks per overview bin
 * (windows narrower than a bin per column answer 503 "loading"); the page shows "loading
 * detail…" and asks for the summary until it is "ready", then draws the detail.
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
	const LABEL_W = 210; /* width of the track labels, CSS pixels */
	const AXIS_H = 26; /* height of the time axis */
	const STEP_H = 16; /* height of the lane of numbered steps */
	const FIND_ROW_H = 6; /* height of one finding's row in the findings lane */
	const GROUP_H = 20; /* height of a process's header row */
	const ROW_H = 18; /* height of an event track */
	const MEM_H = 44; /* height of a memory track */
	const FETCH_DELAY_MS = 60; /* wait this long after the last zoom/pan before asking */
	/* kernel, memcpy, memset, host wait, API call, NVTX, launch */
	const KIND_NAMES = ['kernel', 'memcpy', 'memset', 'host wait', 'CUDA API call', 'NVTX range',
		'launch call'];
	const KIND_COLORS = ['#3b78c4', '#e08a1e', '#8d6cc9', '#d33f3f', '#8a93a3', '#2f9e8f', '#9db8d9'];
	const BUSY_COLOR = '#5f7fa8';
	const HIGHLIGHT = '#f2b300';
	const SEV_COLORS = { error: '#c62828', warning: '#ef8f00', info: '#1e6fd9' };
	const FLOW_COLOR = 'rgba(29,35,48,0.55)';
	const FLOWS_DRAWN_MAX = 400; /* more arrows than this on screen are not readable: none drawn */
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
		steps: [], /* of the primary process (the one with the most kernels) */
		procSteps: new Map(), /* pid -> the steps of that process */
		primaryPid: null,
		findingsMs: null, /* page start to the findings listed */
		t0: 0,
		t1: 1,
		window: null, /* last /api/window answer */
		memory: null, /* last /api/memory answer */
		highlight: null, /* the selected finding */
		selected: null, /* the clicked event: {track, start, end} */
		event: null, /* its /api/event answer */
		range: null, /* the selected range: {t0, t1} */
		rangeAnswer: null, /* its /api/range answer */
		search: null, /* the last /api/search answer */
		collapsed: new Set(), /* pids whose group is collapsed */
		userMoved: false, /* the user zoomed or panned: the steps are not framed on their own */
		framedSteps: false, /* the view was set to the steady-state steps */
		stepsFramedMs: null, /* page start to the steps framed the first time */
		renders: 0,
		frameMs: [], /* the last draw times */
		firstRenderMs: null, /* page start to the first timeline drawn with events */
		detail: true, /* false while the tracks come from the overview */
		firstFromOverview: null, /* the first timeline was drawn from the overview */
		detailMs: null, /* page start to the first timeline drawn from the full tracks */
		lastQueryMs: null, /* round trip of the last window query */
		rows: [], /* [{track, y, h}] and [{group, y, h}] */
		flowsDrawn: 0,
		topH: AXIS_H + STEP_H, /* the axis, steps and findings lanes */
	};
	window.__viewer = state;
	/* for tests: set the visible window exactly (setWindow is defined below) */
	state.setWindow = (t0, t1) => setWindow(t0, t1);

	let fetchTimer = null;
	let fetchSeq = 0;
	let drawQueued = false;

	/* ---- helpers ---- */

	/* A duration in ns as text, 4 significant digits: "850 ns", "12.34 us", "4.567 ms", "1.234 s". */
	function fmtDur(ns) {
		const a = Math.abs(ns);
		const trim = (x) => String(Number(x));
		if (a < 1e3) return Math.round(ns) + ' ns';
		if (a < 1e6) return trim((ns / 1e3).toPrecision(4)) + ' us';
		if (a < 1e9) return trim((ns / 1e6).toPrecision(4)) + ' ms';
		return trim((ns / 1e9).toPrecision(4)) + ' s';
	}

	/* Digits after the point in groups of three: "5.192 345 678". */
	function groupDecimals(s) {
		const dot = s.indexOf('.');
		if (dot < 0) return s;
		const frac = s.slice(dot + 1).replace(/(\d{3})(?=\d)/g, '$1\u2009');
		return s.slice(0, dot + 1) + frac;
	}

	/*
	 * A time since the trace start (ns) as text, exact to res ns: the unit follows the size of
	 * the time (s, ms, us, ns), the decimals the resolution: fmtTime(5192345678, 1000) is
	 * "5.192 346 s", fmtTime(482025000, 1e4) "482.03 ms".
	 */
	function fmtTime(ns, res) {
		const a = Math.abs(ns);
		const unit = a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1;
		const name = unit === 1e9 ? ' s' : unit === 1e6 ? ' ms' : unit === 1e3 ? ' us' : ' ns';
		const r = Math.max(1, res || 1);
		const decimals = Math.min(9, Math.max(0, Math.ceil(Math.log10(unit / r) - 1e-9)));
		return groupDecimals((ns / unit).toFixed(decimals)) + name;
	}

	/* An exact duration: "12.35 ms (12,345,678 ns)". */
	function fmtDurExact(ns) {
		if (Math.abs(ns) < 1e3) return Math.round(ns) + ' ns';
		return fmtDur(ns) + ' (' + Math.round(ns).toLocaleString('en-US') + ' ns)';
	}

	function fmtBytes(b) {
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (b >= 1024 && i < units.length - 1) {
			b /= 1024;
			i++;
		}
		return (i ? b.toFixed(i > 2 ? 2 : 1) : b.toFixed(0)) + ' ' + units[i];
	}

	/* A stable colour for a name, so a kernel keeps its colour across zooms. */
	function nameHue(name) {
		let h = 0;
		for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
		return ((h % 360) + 360) % 360;
	}

	function nameColor(name) {
		return 'hsl(' + nameHue(name) + ',55%,52%)';
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

	function el(tag, cls, text) {
		const e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined) e.textContent = text;
		return e;
	}

	/* ---- layout: the lanes on top, then a group per process with its tracks ---- */

	function processOf(pid) {
		return (state.summary.processes || []).find((p) => p.pid === pid);
	}

	function groupLabel(pid) {
		const p = processOf(pid);
		let s = (state.collapsed.has(pid) ? '\u25b8 ' : '\u25be ') + 'process ' + pid;
		if (p && p.rank !== null && p.rank !== undefined) s += ' \u00b7 rank ' + p.rank;
		if (p && p.command) s += ' \u00b7 ' + p.command;
		return s;
	}

	function layout() {
		const nf = Math.max(1, state.findings.length);
		state.topH = AXIS_H + STEP_H + (state.findings.length ? nf * FIND_ROW_H + 4 : 0);
		let y = state.topH;
		const groups = [];
		const byPid = new Map();
		for (const track of state.summary.tracks) {
			if (!byPid.has(track.pid)) {
				byPid.set(track.pid, []);
				groups.push(track.pid);
			}
			byPid.get(track.pid).push(track);
		}
		state.rows = [];
		for (const pid of groups) {
			state.rows.push({ group: pid, y, h: GROUP_H });
			y += GROUP_H + 1;
			if (state.collapsed.has(pid)) continue;
			for (const track of byPid.get(pid)) {
				const h = track.kind === 'memory' ? MEM_H : ROW_H;
				state.rows.push({ track, y, h });
				y += h + 2;
			}
		}
		const dpr = window.devicePixelRatio || 1;
		const w = scroller.clientWidth;
		const h = Math.max(y + 8, 120);
		canvas.style.width = w + 'px';
		canvas.style.height = h + 'px';
		if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
			/* a new size clears the canvas: draw again at once, not at the next frame */
			canvas.width = Math.round(w * dpr);
			canvas.height = Math.round(h * dpr);
			ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
			if (state.window) draw();
		}
	}

	function rowOfTrack(id) {
		return state.rows.find((r) => r.track && r.track.id === id);
	}

	/* ---- drawing ---- */

	function requestDraw() {
		if (drawQueued) return;
		drawQueued = true;
		requestAnimationFrame(() => {
			drawQueued = false;
			const b = performance.now();
			draw();
			state.frameMs.push(performance.now() - b);
			if (state.frameMs.length > 240) state.frameMs.shift();
		});
	}

	/* A tick step of 1, 2 or 5 times a power of ten, about 100 px apart. */
	function tickStep() {
		const raw = (state.t1 - state.t0) / Math.max(1, plotWidth() / 100);
		const pow = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
		return [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw) || 1;
	}

	/*
	 * The ticks of the time axis. They are labelled with the time since the trace start, to the
	 * tick's precision; when that takes too many digits (deep zoom far into the trace), the
	 * first tick is written in full in the label column and the others relative to it ("+20 ns").
	 */
	function axisTicks() {
		const step = tickStep();
		const first = Math.ceil(state.t0 / step) * step;
		const relative = fmtTime(first, step).length > 12;
		const ticks = [];
		for (let t = first; t < state.t1; t += step)
			ticks.push([t, relative && t !== first ? '+' + fmtDur(t - first) : fmtTime(t, step)]);
		state.axis = { step, relative, base: first, labels: ticks.map((x) => x[1]) };
		return ticks;
	}

	/* The tick lines across the tracks. */
	function drawGrid(ticks, h) {
		ctx.strokeStyle = '#e3e6eb';
		for (const [t] of ticks) {
			const x = Math.round(xOf(t)) + 0.5;
			ctx.beginPath();
			ctx.moveTo(x, 0);
			ctx.lineTo(x, h);
			ctx.stroke();
		}
	}

	/* The axis bar (drawn on top, pinned while the tracks scroll). */
	function drawAxisBar(ticks, w) {
		ctx.fillStyle = '#eceef2';
		ctx.fillRect(0, 0, w, AXIS_H);
		ctx.fillStyle = '#4b5463';
		ctx.strokeStyle = '#9aa1ad';
		for (const [t, text] of ticks) {
			const x = Math.round(xOf(t)) + 0.5;
			ctx.beginPath();
			ctx.moveTo(x, AXIS_H - 6);
			ctx.lineTo(x, AXIS_H);
			ctx.stroke();
			ctx.fillText(text, x + 3, AXIS_H / 2);
		}
		const a = state.axis;
		ctx.fillStyle = '#eceef2';
		ctx.fillRect(0, 0, LABEL_W, AXIS_H);
		ctx.fillStyle = '#1d2330';
		ctx.fillText(a.relative ? 'from ' + fmtTime(a.base, a.step) : 'since trace start', 6, AXIS_H / 2,
			LABEL_W - 10);
	}

	/* The steps shaded across the tracks: alternating tones, warm-up grey. */
	function drawStepShading(h) {
		for (const s of state.steps) {
			if (s.end < state.t0 || s.start > state.t1) continue;
			const x0 = Math.max(LABEL_W, xOf(s.start));
			const x1 = Math.min(canvas.clientWidth, xOf(s.end));
			if (x1 <= x0) continue;
			ctx.fillStyle = s.warmup ? 'rgba(120,120,120,0.10)'
				: s.index % 2 ? 'rgba(59,120,196,0.10)' : 'rgba(59,120,196,0.035)';
			ctx.fillRect(x0, 0, x1 - x0, h);
		}
	}

	/* The step lane: each step numbered, warm-up steps grey. */
	function drawStepLane() {
		const y = AXIS_H;
		ctx.fillStyle = '#f6f7f9';
		ctx.fillRect(0, y, canvas.clientWidth, state.topH - AXIS_H);
		for (const s of state.steps) {
			if (s.end < state.t0 || s.start > state.t1) continue;
			const x0 = Math.max(LABEL_W, xOf(s.start));
			const x1 = Math.min(canvas.clientWidth, xOf(s.end));
			if (x1 <= x0) continue;
			ctx.fillStyle = s.warmup ? '#b3b8c2' : s.index % 2 ? '#5b8fd0' : '#8fb3e0';
			ctx.fillRect(x0, y + 1, Math.max(1, x1 - x0 - 1), STEP_H - 2);
			const text = (x1 - x0 > 70 ? (s.warmup ? 'warm-up ' : 'step ') : '') + s.index;
			if (x1 - x0 > ctx.measureText(text).width + 4) {
				ctx.fillStyle = '#fff';
				ctx.fillText(text, x0 + 3, y + STEP_H / 2);
			}
		}
		ctx.fillStyle = '#1d2330';
		ctx.fillText(state.steps.length ? (state.procSteps.size > 1 ? 'steps of process ' + state.primaryPid
			: 'steps') : state.analysis === 'ready' ? 'no steps found'
			: 'steps: analysing…', 6, y + STEP_H / 2, LABEL_W - 10);
	}

	/* A process's own steps, numbered, in its group's header row (a job of several processes). */
	function drawGroupSteps(row) {
		const W = canvas.clientWidth;
		for (const s of state.procSteps.get(row.group) || []) {
			if (s.end < state.t0 || s.start > state.t1) continue;
			const x0 = Math.max(LABEL_W, xOf(s.start));
			const x1 = Math.min(W, xOf(s.end));
			if (x1 <= x0) continue;
			ctx.fillStyle = s.warmup ? '#c9cdd5' : s.index % 2 ? '#aac3e6' : '#c5d7f0';
			ctx.fillRect(x0, row.y + 3, Math.max(1, x1 - x0 - 1), row.h - 6);
			const text = String(s.index);
			if (x1 - x0 > ctx.measureText(text).width + 4) {
				ctx.fillStyle = '#1d2330';
				ctx.fillText(text, x0 + 3, row.y + row.h / 2);
			}
		}
	}

	/* The findings lane: a row per finding, its affected steps in its severity's colour. */
	function drawFindingsLane() {
		if (!state.findings.length) return;
		const y0 = AXIS_H + STEP_H + 2;
		state.findings.forEach((f, i) => {
			const y = y0 + i * FIND_ROW_H;
			const selected = state.highlight && state.highlight.id === f.id;
			/* its steps in every process it was found in, each in that process's steps */
			const where = f.processes && f.processes.length ? f.processes : [{ pid: f.pid, steps: f.steps }];
			for (const p of where) {
				const stepByIndex = new Map(stepsOf(p.pid).map((s) => [s.index, s]));
				ctx.fillStyle = SEV_COLORS[p.severity || f.severity] || '#8a93a3';
				for (const idx of p.steps) {
					const s = stepByIndex.get(idx);
					if (!s || s.end < state.t0 || s.start > state.t1) continue;
					const x0 = Math.max(LABEL_W, xOf(s.start));
					const x1 = Math.min(canvas.clientWidth, xOf(s.end));
					ctx.fillRect(x0, y, Math.max(1, x1 - x0 - 1), FIND_ROW_H - 2);
				}
			}
			if (f.focus && f.focus.start !== null) {
				/* the costliest occurrence: a dark mark */
				const x0 = Math.max(LABEL_W, xOf(f.focus.start));
				const x1 = Math.min(canvas.clientWidth, xOf(f.focus.end));
				if (x1 >= LABEL_W && x0 <= canvas.clientWidth) {
					ctx.fillStyle = '#1d2330';
					ctx.fillRect(x0, y, Math.max(3, x1 - x0), FIND_ROW_H - 2);
				}
			}
			if (selected) {
				ctx.strokeStyle = HIGHLIGHT;
				ctx.strokeRect(LABEL_W + 0.5, y - 0.5, plotWidth() - 1, FIND_ROW_H - 1);
			}
		});
		ctx.fillStyle = '#1d2330';
		ctx.font = '10px sans-serif';
		ctx.fillText('findings', 6, y0 + (state.findings.length * FIND_ROW_H) / 2, LABEL_W - 10);
		ctx.font = '11px sans-serif';
	}

	function itemColor(kind, nameIdx, names) {
		if (nameIdx < 0) return BUSY_COLOR; /* merged events: a busy block */
		if (kind === 0 || kind === 5) return nameColor(names[nameIdx]);
		if (kind === 6 && nameIdx >= 0) return 'hsl(' + nameHue(names[nameIdx]) + ',45%,72%)';
		return KIND_COLORS[kind] || BUSY_COLOR;
	}

	/* labels: kernels demangled and short (names_short); names: as recorded, for the colors */
	function drawEvents(row, items, names, labels, hl) {
		const y = row.y + 1;
		const h = row.h - 2;
		const sel = state.selected && state.selected.track === row.track.id ? state.selected : null;
		const W = canvas.clientWidth;
		let lastX = -1;
		for (const it of items) {
			const [start, end, name, count, , kind] = it;
			let x0 = xOf(start);
			let x1 = xOf(end);
			if (x1 < LABEL_W || x0 > W) continue;
			x0 = Math.max(LABEL_W, x0);
			x1 = Math.min(W, x1);
			const w = Math.max(1, x1 - x0);
			/* many items in one pixel column: draw the column once */
			if (w <= 1 && Math.floor(x0) === lastX && name < 0) continue;
			lastX = Math.floor(x0);
			ctx.fillStyle = itemColor(kind, name, names);
			ctx.fillRect(x0, y, w, h);
			if (hl && end >= hl.first && start <= hl.last) {
				ctx.strokeStyle = HIGHLIGHT;
				ctx.lineWidth = 2;
				ctx.strokeRect(x0, y, w, h);
				ctx.lineWidth = 1;
			}
			if (sel && name >= 0 && start === sel.start && end === sel.end) {
				ctx.strokeStyle = '#000';
				ctx.lineWidth = 2;
				ctx.strokeRect(x0 + 1, y + 1, Math.max(1, w - 2), h - 2);
				ctx.lineWidth = 1;
			}
			if (w > 40) {
				const text = name >= 0 ? (kind === 6 ? 'launch ' : '') + labels[name]
					: count + ' events';
				ctx.save();
				ctx.beginPath();
				ctx.rect(x0, y, w, h);
				ctx.clip();
				ctx.fillStyle = kind === 6 ? '#1d2330' : '#fff';
				ctx.fillText(text, x0 + 3, y + h / 2);
				ctx.restore();
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

	/* An arrow from a launch call (its end) to the GPU work (its start). */
	function drawArrow(x0, y0, x1, y1, color, width) {
		ctx.strokeStyle = color;
		ctx.fillStyle = color;
		ctx.lineWidth = width;
		ctx.beginPath();
		ctx.moveTo(x0, y0);
		const my = (y0 + y1) / 2;
		ctx.bezierCurveTo(x0, my, x1, my, x1, y1);
		ctx.stroke();
		const dir = y1 > y0 ? -1 : 1;
		ctx.beginPath();
		ctx.moveTo(x1, y1);
		ctx.lineTo(x1 - 3, y1 + dir * 5);
		ctx.lineTo(x1 + 3, y1 + dir * 5);
		ctx.closePath();
		ctx.fill();
		ctx.lineWidth = 1;
	}

	/* y of the edge of track row r that faces y. */
	function edgeToward(r, y) {
		return r.y + r.h / 2 < y ? r.y + r.h - 1 : r.y + 1;
	}

	/*
	 * The launch-to-GPU arrows of the window: drawn when few enough are on screen to be read
	 * (the server sends them only for windows with few GPU events); the selected event's
	 * arrow always, thicker.
	 */
	function drawFlows(top) {
		state.flowsDrawn = 0;
		const flows = (state.window && state.window.flows) || [];
		const W = canvas.clientWidth;
		const visible = [];
		for (const f of flows) {
			const [lt, ls, le, gt, gs] = f;
			const a = Math.min(ls, gs);
			const b = Math.max(le, gs);
			if (b < state.t0 || a > state.t1) continue;
			const lr = rowOfTrack(lt);
			const gr = rowOfTrack(gt);
			if (!lr || !gr) continue;
			visible.push([xOf(le), lr, xOf(gs), gr]);
		}
		if (visible.length <= FLOWS_DRAWN_MAX) {
			ctx.save();
			ctx.beginPath();
			ctx.rect(LABEL_W, top + state.topH, W - LABEL_W, canvas.clientHeight);
			ctx.clip();
			for (const [x0, lr, x1, gr] of visible) {
				drawArrow(x0, edgeToward(lr, gr.y), x1, edgeToward(gr, lr.y), FLOW_COLOR, 1);
			}
			ctx.restore();
			state.flowsDrawn = visible.length;
		}
		const ev = state.event;
		if (ev && ev.launch && ev.gpu) {
			const lr = rowOfTrack(ev.launch.track);
			const gr = rowOfTrack(ev.gpu.track);
			if (lr && gr) {
				ctx.save();
				ctx.beginPath();
				ctx.rect(LABEL_W, top + state.topH, W - LABEL_W, canvas.clientHeight);
				ctx.clip();
				drawArrow(xOf(ev.launch.end), edgeToward(lr, gr.y), xOf(ev.gpu.start),
					edgeToward(gr, lr.y), '#000', 2);
				ctx.restore();
			}
		}
	}

	/* The selected range: a band across the tracks, and its length on the axis. */
	function drawRange(h) {
		const r = state.range;
		if (!r) return;
		const x0 = Math.max(LABEL_W, xOf(r.t0));
		const x1 = Math.min(canvas.clientWidth, xOf(r.t1));
		if (x1 < LABEL_W || x0 > canvas.clientWidth) return;
		ctx.fillStyle = 'rgba(30,111,217,0.12)';
		ctx.fillRect(x0, 0, Math.max(1, x1 - x0), h);
		ctx.fillStyle = '#1e6fd9';
		ctx.fillRect(x0, 0, 1, h);
		ctx.fillRect(x1, 0, 1, h);
	}

	function drawRangeLabel() {
		const r = state.range;
		if (!r) return;
		const x0 = Math.max(LABEL_W, xOf(r.t0));
		const x1 = Math.min(canvas.clientWidth, xOf(r.t1));
		if (x1 < LABEL_W || x0 > canvas.clientWidth) return;
		ctx.fillStyle = 'rgba(30,111,217,0.25)';
		ctx.fillRect(x0, 0, Math.max(1, x1 - x0), AXIS_H);
		ctx.fillStyle = '#1e6fd9';
		const text = fmtDur(r.t1 - r.t0);
		const tw = ctx.measureText(text).width + 8;
		ctx.fillRect((x0 + x1 - tw) / 2, AXIS_H - 13, tw, 13);
		ctx.fillStyle = '#fff';
		ctx.fillText(text, (x0 + x1 - tw) / 2 + 4, AXIS_H - 6.5);
	}

	function draw() {
		if (!state.summary) return;
		const w = canvas.clientWidth;
		const h = canvas.clientHeight;
		ctx.clearRect(0, 0, w, h);
		ctx.font = '11px sans-serif';
		ctx.textBaseline = 'middle';
		const top = scroller.scrollTop; /* the lanes on top stay in sight: drawn at top */
		const ticks = axisTicks();
		drawGrid(ticks, h);
		drawStepShading(h);

		const hl = state.highlight;
		if (hl) {
			/* the finding's span lightly, its costliest occurrence more */
			ctx.fillStyle = 'rgba(242,179,0,0.10)';
			const x0 = Math.max(LABEL_W, xOf(hl.first));
			const x1 = Math.min(w, xOf(hl.last));
			if (x1 > LABEL_W) ctx.fillRect(x0, 0, Math.max(2, x1 - x0), h);
			if (hl.focusStart !== null) {
				const f0 = Math.max(LABEL_W, xOf(hl.focusStart));
				const f1 = Math.min(w, xOf(hl.focusEnd));
				ctx.fillStyle = 'rgba(242,179,0,0.22)';
				if (f1 > LABEL_W) ctx.fillRect(f0, 0, Math.max(2, f1 - f0), h);
			}
		}

		const byId = new Map();
		if (state.window) for (const t of state.window.tracks) byId.set(t.id, t);
		const memById = new Map();
		if (state.memory) for (const t of state.memory.tracks) memById.set(t.id, t);
		const bottom = top + scroller.clientHeight;
		let drawn = 0;
		for (const row of state.rows) {
			if (row.y > bottom || row.y + row.h < top + state.topH) continue; /* out of sight */
			if (row.group !== undefined) {
				ctx.fillStyle = '#dfe3ea';
				ctx.fillRect(0, row.y, w, row.h);
				/* the label over the whole row, unless the row shows the process's steps */
				const steps = state.procSteps.size > 1;
				if (steps) drawGroupSteps(row);
				ctx.fillStyle = '#dfe3ea';
				ctx.fillRect(0, row.y, LABEL_W, row.h);
				ctx.fillStyle = '#1d2330';
				ctx.font = 'bold 11px sans-serif';
				ctx.fillText(fitText(groupLabel(row.group), steps ? LABEL_W - 10 : w - 12), 6, row.y + row.h / 2);
				ctx.font = '11px sans-serif';
				continue;
			}
			ctx.fillStyle = '#f0f2f5';
			ctx.fillRect(LABEL_W, row.y + row.h + 1, w - LABEL_W, 1);
			if (row.track.kind === 'memory') {
				const m = memById.get(row.track.id);
				if (m) drawMemory(row, m.samples, m.peak);
			} else {
				const t = byId.get(row.track.id);
				if (t) {
					const win = state.window;
					drawEvents(row, t.items, win.names, win.names_short || win.names, hl);
					drawn += t.items.length;
				}
			}
			/* the label column, drawn last so that it covers what overflows */
			ctx.fillStyle = '#f6f7f9';
			ctx.fillRect(0, row.y, LABEL_W, row.h + 2);
			ctx.fillStyle = '#1d2330';
			ctx.fillText(fitText(label(row.track), LABEL_W - 18), 14, row.y + row.h / 2);
		}
		drawFlows(top);
		drawRange(h);
		ctx.save();
		ctx.translate(0, top);
		drawAxisBar(ticks, w);
		drawStepLane();
		drawFindingsLane();
		drawRangeLabel();
		ctx.restore();
		ctx.fillStyle = '#c9ced6';
		ctx.fillRect(LABEL_W - 1, 0, 1, h);

		canvas.dataset.t0 = String(Math.round(state.t0));
		canvas.dataset.t1 = String(Math.round(state.t1));
		const res = Math.max(1, (state.t1 - state.t0) / 1000);
		document.getElementById('window-text').textContent = fmtTime(state.t0, res) + ' .. ' +
			fmtTime(state.t1, res) + ' (' + fmtDur(state.t1 - state.t0) + ')';
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

	/* text cut with an ellipsis to fit width px in the current font (not squeezed) */
	const fitCache = new Map();
	function fitText(text, width) {
		const key = ctx.font + '|' + width + '|' + text;
		let r = fitCache.get(key);
		if (r !== undefined) return r;
		r = text;
		if (ctx.measureText(r).width > width) {
			let lo = 0;
			let hi = text.length;
			while (lo < hi) {
				const mid = (lo + hi + 1) >> 1;
				if (ctx.measureText(text.slice(0, mid) + '\u2026').width <= width) lo = mid;
				else hi = mid - 1;
			}
			r = text.slice(0, lo) + '\u2026';
		}
		if (fitCache.size > 2000) fitCache.clear();
		fitCache.set(key, r);
		return r;
	}

	function label(track) {
		return track.name;
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
		return events + ' events in view, drawn as ' + items + ' items' +
			(win.flows ? ', ' + win.flows.length + ' launch arrows' : '');
	}

	/* Show [t0, t1), clamped to a sane span. */
	function setWindow(t0, t1) {
		const s = state.summary;
		const full = Math.max(1, s.end - s.start);
		let span = Math.min(Math.max(t1 - t0, 100), full * 4);
		let a = t0 + (t1 - t0 - span) / 2;
		if (a < s.start - full) a = s.start - full;
		if (a + span > s.end + full) a = s.end + full - span;
		state.t0 = a;
		state.t1 = a + span;
		requestDraw();
		scheduleFetch(false);
	}

	/* Show [a, b] with a margin of pad (a share of its span) on each side. */
	function frame(a, b, pad) {
		const span = Math.max(b - a, 100);
		setWindow(a - span * pad, a + span * (1 + pad));
	}

	function showAll() {
		const s = state.summary;
		const pad = Math.max(1, (s.end - s.start) * 0.01);
		setWindow(s.start - pad, s.end + pad);
	}

	/* The steady-state steps (all steps when every one is warm-up); null without steps. */
	function steadySpan() {
		const steady = state.steps.filter((s) => !s.warmup);
		const list = steady.length ? steady : state.steps;
		if (!list.length) return null;
		return [Math.min(...list.map((s) => s.start)), Math.max(...list.map((s) => s.end))];
	}

	function showSteps() {
		const span = steadySpan();
		if (!span) return false;
		frame(span[0], span[1], 0.02);
		state.framedSteps = true;
		if (state.stepsFramedMs === null) state.stepsFramedMs = performance.now() - state.started;
		return true;
	}

	function goToStep(n) {
		const s = state.steps.find((x) => x.index === n);
		if (!s) {
			statusEl.textContent = 'no step ' + n + (state.steps.length ? ' (steps ' +
				state.steps[0].index + ' to ' + state.steps[state.steps.length - 1].index + ')' : '');
			return false;
		}
		state.userMoved = true;
		frame(s.start, s.end, 0.03);
		document.body.dataset.step = String(n);
		return true;
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
			const rule = el('div', 'rule', f.rule + ' · ' + f.severity +
				(f.steps.length ? ' · ' + f.steps.length + ' steps' : '') +
				(f.focus && f.focus.step !== null && f.focus.step !== undefined
					? ' · costliest in step ' + f.focus.step : ''));
			li.append(rule, el('div', 'title', f.title), el('div', 'fix', f.fix || ''));
			li.addEventListener('click', () => selectFinding(f));
			list.appendChild(li);
		}
	}

	/*
	 * Select a finding: its costliest occurrence is framed and selected as a range (with its
	 * totals); the finding's whole span stays lightly shaded and its events outlined.
	 */
	function selectFinding(f) {
		for (const e of document.querySelectorAll('#findings li.selected')) e.classList.remove('selected');
		const li = document.querySelector('#findings li[data-id="' + f.id + '"]');
		if (li) li.classList.add('selected');
		document.body.dataset.highlight = String(f.id);
		state.userMoved = true;
		if (f.first_ns === null || f.last_ns === null) {
			state.highlight = null;
			requestDraw();
			return;
		}
		const fs = f.focus && f.focus.start !== null ? f.focus.start : f.first_ns;
		const fe = f.focus && f.focus.end !== null ? f.focus.end : f.last_ns;
		state.highlight = { id: f.id, first: f.first_ns, last: f.last_ns, focusStart: fs, focusEnd: fe };
		frame(fs, Math.max(fe, fs + 2000), 0.1);
		selectRange(fs, Math.max(fe, fs + 1));
		scheduleFetch(true);
	}

	/* ---- details of the clicked event ---- */

	function clearSelection() {
		state.selected = null;
		state.event = null;
		document.getElementById('details-section').hidden = true;
		delete document.body.dataset.selected;
		requestDraw();
	}

	async function selectEvent(track, start, end) {
		state.selected = { track, start, end };
		document.body.dataset.selected = 'loading';
		requestDraw();
		let ev;
		try {
			ev = await getJSON('api/event?track=' + track + '&start=' + start + '&end=' + end);
		} catch (e) {
			ev = { status: 'error', error: e.message };
		}
		if (!state.selected || state.selected.track !== track || state.selected.start !== start) return;
		state.event = ev.status === 'ok' ? ev : null;
		renderDetails(ev);
		document.body.dataset.selected = ev.status === 'ok' ? 'ready' : 'none';
		requestDraw();
	}

	/* A field of the details as its unit (the server's "columns": include/cuscope/columns.def) says. */
	function fieldText(v, unit) {
		if (v === null || v === undefined) return '—';
		if (Array.isArray(v)) return '(' + v.join(', ') + ')';
		if (unit === 'ns' && typeof v === 'number') return fmtTime(v, 1) + '  [' + v + ' ns]';
		if (unit === 'bytes' && typeof v === 'number') return fmtBytes(v) + (v >= 1024 ? ' (' + v + ' B)' : '');
		return String(v);
	}

	/* The steps of process pid (those of the primary process when it has none of its own). */
	function stepsOf(pid) {
		return (pid !== undefined && state.procSteps.get(pid)) || state.steps;
	}

	/* The step of process pid (default: the primary one) that holds time t, or null. */
	function stepAt(t, pid) {
		return stepsOf(pid).find((s) => s.start <= t && t < s.end) || null;
	}

	function renderDetails(ev) {
		const box = document.getElementById('details');
		box.textContent = '';
		document.getElementById('details-section').hidden = false;
		if (ev.status !== 'ok') {
			box.append(el('p', 'empty', ev.status === 'error' ? 'error: ' + ev.error : 'No event stored here.'));
			return;
		}
		const f = ev.fields;
		const track = state.summary.tracks[ev.track];
		const title = f.nameDemangled || f.namePlain || f.name || f.text || f.syncType ||
			(f.copyKind ? 'Memcpy ' + f.copyKind : ev.kind === 'memset' ? 'Memset' : ev.kind);
		box.append(el('div', 'name', title));
		const start = f.start;
		const end = f.end;
		const meta = el('div', 'meta', ev.kind + (track ? ' on ' + track.name : '') +
			(typeof start === 'number' && typeof end === 'number' ? ' · ' + fmtDurExact(end - start) : ''));
		box.append(meta);
		const links = el('div', 'links');
		if (ev.launch && ev.launch.track >= 0) {
			const b = el('button', 'go-launch', 'launch call: ' + fmtDur(ev.launch.end - ev.launch.start) +
				', ' + fmtDur(ev.gpu.start - ev.launch.start) + ' before the GPU');
			b.type = 'button';
			b.addEventListener('click', () => revealEvent(ev.launch.track, ev.launch.start, ev.launch.end));
			links.append(b);
		}
		if (ev.gpu && ev.gpu.track >= 0 && state.selected && state.selected.track !== ev.gpu.track) {
			const b = el('button', 'go-gpu', 'GPU work on ' + state.summary.tracks[ev.gpu.track].name);
			b.type = 'button';
			b.addEventListener('click', () => revealEvent(ev.gpu.track, ev.gpu.start, ev.gpu.end));
			links.append(b);
		}
		if (links.childNodes.length) box.append(links);

		/* the findings of the step it is in */
		const pid = f.pid;
		const step = typeof start === 'number' ? stepAt(start, pid) : null;
		const belongs = el('div', 'belongs');
		if (step) {
			belongs.append(el('h3', null, (step.warmup ? 'Warm-up step ' : 'Step ') + step.index +
				(state.procSteps.size > 1 ? ' of process ' + pid : '')));
			/* the findings of this process in this step */
			const mine = state.findings.filter((x) => (x.pid === pid && x.steps.includes(step.index)) ||
				(x.processes || []).some((p) => p.pid === pid && p.steps.includes(step.index)));
			for (const x of mine) {
				const inFocus = x.focus && x.focus.start !== null && start < x.focus.end &&
					(end === null ? start : end) >= x.focus.start;
				const b = el('button', 'finding sev-' + x.severity, x.rule + (inFocus ? ' (its costliest occurrence)' : ''));
				b.type = 'button';
				b.dataset.rule = x.rule;
				b.addEventListener('click', () => selectFinding(x));
				belongs.append(b);
			}
			if (!mine.length) belongs.append(el('span', 'empty', 'no finding in this step'));
		}
		box.append(belongs);

		const table = el('table', 'fields');
		for (const key of Object.keys(f)) {
			const tr = el('tr');
			const col = (ev.columns && ev.columns[key]) || {};
			const k = el('td', 'key', key);
			if (col.label) k.title = col.label + (col.unit && col.unit !== 'none' ? ' (' + col.unit + ')' : '');
			tr.append(k, el('td', 'value', fieldText(f[key], col.unit)));
			tr.dataset.key = key;
			table.append(tr);
		}
		box.append(table);
		box.append(el('h3', null, 'Stack'));
		if (!ev.stack.length) {
			box.append(el('p', 'empty', 'no stack recorded (record --backtrace captures one)'));
		} else {
			const ol = el('ol', 'stack');
			for (const fr of ev.stack) {
				let text = fr.symbol || '??';
				if (fr.file) text += ' \u2014 ' + fr.file + (fr.line ? ':' + fr.line : '');
				else if (fr.module) text += ' \u2014 ' + fr.module + '+0x' + fr.offset.toString(16);
				ol.append(el('li', fr.kind, text));
			}
			box.append(ol);
		}
	}

	/* Center an event in the view (zoomed so that it can be seen) and select it. */
	function revealEvent(track, start, end) {
		const dur = Math.max(end - start, 1);
		let span = state.t1 - state.t0;
		if (span > dur * 200) span = Math.max(dur * 200, 20000);
		if (span < dur * 1.5) span = dur * 1.5;
		const mid = start + dur / 2;
		state.userMoved = true;
		setWindow(mid - span / 2, mid + span / 2);
		const row = rowOfTrack(track);
		if (row && (row.y < scroller.scrollTop || row.y + row.h > scroller.scrollTop + scroller.clientHeight))
			scroller.scrollTop = Math.max(0, row.y - scroller.clientHeight / 3);
		selectEvent(track, start, end);
	}

	/* ---- range selection ---- */

	async function selectRange(t0, t1) {
		state.range = { t0: Math.round(Math.min(t0, t1)), t1: Math.round(Math.max(t0, t1)) };
		if (state.range.t1 <= state.range.t0) state.range.t1 = state.range.t0 + 1;
		const r = state.range;
		document.body.dataset.range = 'loading';
		requestDraw();
		let a;
		try {
			a = await getJSON('api/range?t0=' + r.t0 + '&t1=' + r.t1);
		} catch (e) {
			a = { status: 'error', error: e.message };
		}
		if (state.range !== r) return;
		state.rangeAnswer = a.tracks ? a : null;
		renderRange(a);
		document.body.dataset.range = a.tracks ? 'ready' : 'none';
	}

	function clearRange() {
		state.range = null;
		state.rangeAnswer = null;
		document.getElementById('range-section').hidden = true;
		delete document.body.dataset.range;
		requestDraw();
	}

	function renderRange(a) {
		const box = document.getElementById('range');
		box.textContent = '';
		document.getElementById('range-section').hidden = false;
		if (!a.tracks) {
			box.append(el('p', 'empty', a.status === 'loading' ? 'the tracks are still being read'
				: 'error: ' + (a.error || 'no answer')));
			return;
		}
		const span = a.t1 - a.t0;
		box.append(el('div', 'meta', fmtTime(a.t0, 1) + ' .. ' + fmtTime(a.t1, 1) + ' · ' + fmtDurExact(span)));
		const table = el('table', 'totals');
		const head = el('tr');
		for (const [h, cls] of [['track', ''], ['busy (share)', 'num'], ['events', 'num'], ['bytes', 'num']])
			head.append(el('th', cls, h));
		table.append(head);
		for (const t of a.tracks) {
			const track = state.summary.tracks[t.id];
			if (!track) continue;
			const tr = el('tr');
			tr.dataset.track = String(t.id);
			if (track.kind === 'memory') {
				tr.append(el('td', null, track.name), el('td', 'num', fmtBytes(t.end_level) + ' in use'),
					el('td', 'num', 'peak'), el('td', 'num', fmtBytes(t.peak)));
				tr.title = 'in use at the start ' + fmtBytes(t.start_level) + ', at the end ' +
					fmtBytes(t.end_level) + ', peak ' + fmtBytes(t.peak);
			} else {
				if (!t.events) continue;
				let what = t.events + '';
				if (t.kernels || t.memcpys || t.memsets) {
					what = [t.kernels ? t.kernels + ' kernels' : '', t.memcpys ? t.memcpys + ' memcpys' : '',
						t.memsets ? t.memsets + ' memsets' : ''].filter(Boolean).join(', ');
				} else if (t.launches) {
					what = t.launches + ' launches';
				}
				tr.append(el('td', null, track.name),
					el('td', 'num', fmtDur(t.busy) + ' (' + (100 * t.busy / span).toFixed(1) + '%)'),
					el('td', 'num', what),
					el('td', 'num', t.bytes ? fmtBytes(t.bytes) : ''));
			}
			table.append(tr);
		}
		box.append(table);
	}

	/* ---- search ---- */

	async function search(dir) {
		const q = document.getElementById('search').value.trim();
		const count = document.getElementById('search-count');
		if (!q) {
			count.textContent = '';
			return;
		}
		const cur = state.search && state.search.q === q && state.search.match ? state.search.match : null;
		const t = cur ? cur.start : Math.floor(dir > 0 ? state.t0 : state.t1);
		const track = cur ? cur.track : dir > 0 ? -1 : 1e9;
		let a;
		try {
			a = await getJSON('api/search?q=' + encodeURIComponent(q) + '&t=' + t + '&track=' + track +
				'&dir=' + dir);
		} catch (e) {
			count.textContent = 'error';
			return;
		}
		if (a.status === 'loading') {
			count.textContent = 'loading…';
			return;
		}
		state.search = a;
		document.body.dataset.search = String(a.total);
		if (!a.match) {
			count.textContent = 'no match';
			return;
		}
		count.textContent = a.index + ' / ' + a.total;
		revealEvent(a.match.track, a.match.start, a.match.end);
	}

	/* ---- legend ---- */

	function renderLegend() {
		const list = document.getElementById('legend');
		const entries = [
			['linear-gradient(90deg,' + nameColor('a') + ',' + nameColor('kernel') + ',' + nameColor('b') + ')',
				'kernel (colour by name), NVTX range'],
			[KIND_COLORS[1], 'memcpy'], [KIND_COLORS[2], 'memset'], [KIND_COLORS[3], 'host wait'],
			[KIND_COLORS[4], 'CUDA API call'], ['hsl(210,45%,72%)', 'launch call (host), coloured as its kernel'],
			[BUSY_COLOR, 'merged events (narrower than a pixel)'],
			['rgba(47,158,143,0.6)', 'device memory in use'],
			['#5b8fd0', 'step (numbered); grey: warm-up'],
			[SEV_COLORS.warning, 'finding: its steps; dark mark: its costliest occurrence'],
			['rgba(242,179,0,0.5)', 'selected finding'], ['rgba(30,111,217,0.3)', 'selected range'],
			[FLOW_COLOR, 'arrow: launch call to its GPU work'],
		];
		list.textContent = '';
		for (const [color, text] of entries) {
			const li = el('li');
			const sw = el('span', 'swatch');
			sw.style.background = color;
			li.append(sw, el('span', null, text));
			list.append(li);
		}
	}

	/* ---- interaction ---- */

	function zoomAround(at, factor) {
		state.userMoved = true;
		setWindow(at - (at - state.t0) * factor, at + (state.t1 - at) * factor);
	}

	canvas.addEventListener('wheel', (e) => {
		if (e.shiftKey) return; /* let the tracks scroll */
		e.preventDefault();
		const rect = canvas.getBoundingClientRect();
		const x = Math.max(LABEL_W, e.clientX - rect.left);
		const factor = Math.exp((e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY) * 0.002);
		zoomAround(tOf(x), factor);
	}, { passive: false });

	let drag = null;
	let mouseX = null;
	canvas.addEventListener('mousedown', (e) => {
		if (e.button !== 0) return;
		const rect = canvas.getBoundingClientRect();
		const x = e.clientX - rect.left;
		/* Shift+drag, or a drag along the time axis, selects a range; any other drag pans */
		const onAxis = e.clientY - rect.top - scroller.scrollTop < AXIS_H;
		drag = { x: e.clientX, y: e.clientY, t0: state.t0, t1: state.t1, moved: false,
			select: (e.shiftKey || onAxis) && x >= LABEL_W, at: tOf(Math.max(LABEL_W, x)) };
		if (!drag.select) canvas.classList.add('dragging');
		e.preventDefault();
	});
	window.addEventListener('mouseup', (e) => {
		const d = drag;
		drag = null;
		canvas.classList.remove('dragging');
		if (!d) return;
		if (d.select && d.moved) {
			const rect = canvas.getBoundingClientRect();
			selectRange(d.at, tOf(Math.max(LABEL_W, e.clientX - rect.left)));
			return;
		}
		if (!d.moved) click(e);
	});
	window.addEventListener('mousemove', (e) => {
		const rect = canvas.getBoundingClientRect();
		mouseX = e.clientX - rect.left;
		if (drag) {
			if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) drag.moved = true;
			if (!drag.moved) return;
			tooltip.hidden = true;
			if (drag.select) {
				state.range = { t0: Math.min(drag.at, tOf(Math.max(LABEL_W, mouseX))),
					t1: Math.max(drag.at, tOf(Math.max(LABEL_W, mouseX))) };
				requestDraw();
				return;
			}
			state.userMoved = true;
			const dt = ((e.clientX - drag.x) / plotWidth()) * (drag.t1 - drag.t0);
			setWindow(drag.t0 - dt, drag.t1 - dt);
			return;
		}
		hover(e);
	});

	/* What is at canvas point (x, y): {row, item} or {row, group}, or null. */
	function hit(x, y) {
		const row = state.rows.find((r) => y >= r.y && y < r.y + r.h);
		if (!row) return null;
		if (row.group !== undefined) return { row };
		if (!state.window || x < LABEL_W || row.track.kind === 'memory') return { row };
		const t = state.window.tracks.find((w) => w.id === row.track.id);
		if (!t) return { row };
		const at = tOf(x);
		const slack = (state.t1 - state.t0) / plotWidth() * 2;
		/* the narrowest item under the point (overlapping NVTX ranges, kernels) */
		let best = null;
		for (const i of t.items) {
			if (i[0] - slack <= at && at <= i[1] + slack && (!best || i[1] - i[0] < best[1] - best[0]))
				best = i;
		}
		return { row, item: best };
	}

	/* The finding row of the findings lane at y, or null. */
	function findingAt(y) {
		const y0 = AXIS_H + STEP_H + 2;
		const i = Math.floor((y - y0) / FIND_ROW_H);
		return y >= y0 && i >= 0 && i < state.findings.length ? state.findings[i] : null;
	}

	function click(e) {
		const rect = canvas.getBoundingClientRect();
		const x = e.clientX - rect.left;
		const y = e.clientY - rect.top;
		const yh = y - scroller.scrollTop; /* in the lanes on top, pinned */
		if (yh < state.topH) {
			const f = x >= LABEL_W ? findingAt(yh) : null;
			if (f) selectFinding(f);
			if (yh >= AXIS_H && yh < AXIS_H + STEP_H && x >= LABEL_W) {
				const s = stepAt(tOf(x));
				if (s) goToStep(s.index);
			}
			return;
		}
		const h = hit(x, y);
		if (h && h.row.group !== undefined) {
			const pid = h.row.group;
			const s = x >= LABEL_W && state.procSteps.size > 1 ? stepAt(tOf(x), pid) : null;
			if (s) {
				/* a step of this process, in its header: show it */
				state.userMoved = true;
				frame(s.start, s.end, 0.03);
				return;
			}
			if (state.collapsed.has(pid)) state.collapsed.delete(pid);
			else state.collapsed.add(pid);
			document.body.dataset.collapsed = [...state.collapsed].join(',');
			layout();
			requestDraw();
			return;
		}
		if (h && h.item && h.item[2] >= 0) {
			selectEvent(h.row.track.id, h.item[0], h.item[1]);
		} else if (h && h.item) {
			/* a busy block: zoom into it */
			frame(h.item[0], h.item[1], 0.05);
			state.userMoved = true;
		} else {
			clearSelection();
		}
	}

	/* Device memory in use at time t on a memory track (the last sample at or before t). */
	function memoryAt(id, t) {
		const m = state.memory && state.memory.tracks.find((x) => x.id === id);
		if (!m) return null;
		let v = null;
		for (const [st, val] of m.samples) {
			if (st > t) break;
			v = val;
		}
		return v === null ? null : { value: v, peak: m.peak };
	}

	/* The item under the mouse, shown in the tooltip. */
	function hover(e) {
		const rect = canvas.getBoundingClientRect();
		const x = e.clientX - rect.left;
		const y = e.clientY - rect.top;
		tooltip.hidden = true;
		if (!state.summary || x < 0 || x > rect.width || y < 0 || y > rect.height) return;
		let text = null;
		const yh = y - scroller.scrollTop; /* in the lanes on top, pinned */
		if (yh < state.topH) {
			if (x < LABEL_W) return;
			const f = findingAt(yh);
			const s = stepAt(tOf(x));
			if (f) text = f.rule + ' (' + f.severity + '): ' + f.title;
			else if (s && yh >= AXIS_H) text = (s.warmup ? 'warm-up step ' : 'step ') + s.index + '\n' +
				fmtDurExact(s.end - s.start) + ' at ' + fmtTime(s.start, 1);
			else text = fmtTime(tOf(x), (state.t1 - state.t0) / plotWidth());
		} else {
			const h = hit(x, y);
			if (!h || x < LABEL_W) {
				if (h && h.row.track) text = h.row.track.name + ' (pid ' + h.row.track.pid + ')';
				else if (h) text = groupLabel(h.row.group).slice(2) + '\n(click: ' +
					(state.collapsed.has(h.row.group) ? 'open' : 'collapse') + ')';
			} else if (h.row.group !== undefined) {
				const s = state.procSteps.size > 1 ? stepAt(tOf(x), h.row.group) : null;
				if (s) text = (s.warmup ? 'warm-up step ' : 'step ') + s.index + ' of process ' + h.row.group +
					'\n' + fmtDurExact(s.end - s.start) + ' at ' + fmtTime(s.start, 1);
			} else if (h.row.track && h.row.track.kind === 'memory') {
				const m = memoryAt(h.row.track.id, tOf(x));
				if (m) text = h.row.track.name + ': ' + fmtBytes(m.value) + ' in use at ' +
					fmtTime(tOf(x), (state.t1 - state.t0) / plotWidth()) + ' (peak ' + fmtBytes(m.peak) + ')';
			} else if (h.item) {
				const it = h.item;
				const full = state.window.names_demangled || state.window.names;
				const kind = it[5];
				if (it[2] >= 0) {
					text = (kind === 6 ? 'launch of ' : '') + full[it[2]] + '\n' + (KIND_NAMES[kind] || '') +
						' \u00b7 ' + fmtDurExact(it[1] - it[0]) + '\nstart ' + fmtTime(it[0], 1) +
						'\nend   ' + fmtTime(it[1], 1);
				} else {
					text = it[3] + ' events (busy ' + fmtDurExact(it[4]) + ')\n' + fmtTime(it[0], 1) +
						' .. ' + fmtTime(it[1], 1);
				}
				if (it[0] >= state.t0) text += '\n+' + fmtDur(it[0] - state.t0) + ' from the view start';
			}
		}
		if (!text) return;
		tooltip.textContent = text;
		tooltip.hidden = false;
		const pane = document.getElementById('timeline-pane').getBoundingClientRect();
		tooltip.style.left = Math.max(0, Math.min(e.clientX - pane.left + 12, pane.width - 480)) + 'px';
		tooltip.style.top = (e.clientY - pane.top + 12) + 'px';
	}

	/* WASD as in the Perfetto UI: W/S zoom in and out around the mouse, A/D pan. */
	const keysDown = new Set();
	let keyTimer = null;
	function keyStep() {
		if (!keysDown.size || !state.summary) {
			keyTimer = null;
			return;
		}
		const span = state.t1 - state.t0;
		const at = mouseX !== null && mouseX >= LABEL_W && mouseX <= canvas.clientWidth ? tOf(mouseX)
			: (state.t0 + state.t1) / 2;
		if (keysDown.has('w')) zoomAround(at, 0.85);
		if (keysDown.has('s')) zoomAround(at, 1 / 0.85);
		if (keysDown.has('a')) {
			state.userMoved = true;
			setWindow(state.t0 - span * 0.08, state.t1 - span * 0.08);
		}
		if (keysDown.has('d')) {
			state.userMoved = true;
			setWindow(state.t0 + span * 0.08, state.t1 + span * 0.08);
		}
		keyTimer = setTimeout(keyStep, 30);
	}

	window.addEventListener('keydown', (e) => {
		const tag = e.target && e.target.tagName;
		if (tag === 'INPUT' || tag === 'TEXTAREA') {
			if (e.key === 'Escape') e.target.blur();
			return;
		}
		if (e.ctrlKey || e.metaKey || e.altKey || !state.summary) return;
		const k = e.key.toLowerCase();
		if (k === 'w' || k === 'a' || k === 's' || k === 'd') {
			e.preventDefault();
			if (!keysDown.has(k)) {
				keysDown.add(k);
				if (!keyTimer) keyStep();
			}
			return;
		}
		if (e.key === '0') showAll();
		else if (k === 'f') {
			if (state.selected) revealEvent(state.selected.track, state.selected.start, state.selected.end);
			else if (state.range) frame(state.range.t0, state.range.t1, 0.05);
			else showSteps();
		} else if (e.key === 'Escape') {
			clearSelection();
			clearRange();
		} else if (e.key === '/') {
			e.preventDefault();
			document.getElementById('search').focus();
		}
	});
	window.addEventListener('keyup', (e) => keysDown.delete(e.key.toLowerCase()));
	window.addEventListener('blur', () => keysDown.clear());

	document.getElementById('reset').addEventListener('click', () => {
		state.userMoved = true;
		showAll();
	});
	document.getElementById('steps-btn').addEventListener('click', () => {
		state.userMoved = true;
		showSteps();
	});
	document.getElementById('step-form').addEventListener('submit', (e) => {
		e.preventDefault();
		const n = Number(document.getElementById('step-input').value);
		if (Number.isInteger(n)) goToStep(n);
	});
	document.getElementById('search-form').addEventListener('submit', (e) => {
		e.preventDefault();
		search(1);
	});
	document.getElementById('search').addEventListener('keydown', (e) => {
		if (e.key === 'Enter' && e.shiftKey) {
			e.preventDefault();
			search(-1);
		}
	});
	document.getElementById('search-prev').addEventListener('click', () => search(-1));
	document.getElementById('details-close').addEventListener('click', clearSelection);
	document.getElementById('range-close').addEventListener('click', clearRange);
	scroller.addEventListener('scroll', requestDraw);
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

	/* How the steps were found, beside the findings. */
	function stepsText(f) {
		const warm = f.steps.filter((x) => x.warmup).length;
		document.getElementById('steps-text').textContent = f.steps.length + ' steps (' + warm +
			' warm-up), found by ' + f.step_method + ': ' + (f.step_detail || '') +
			(f.window ? '; analysed in a window: ' + f.window.text +
				'; findings and their totals cover this window only' : '');
		if (f.steps.length) {
			const input = document.getElementById('step-input');
			input.min = String(f.steps[0].index);
			input.max = String(f.steps[f.steps.length - 1].index);
		}
	}

	/*
	 * The steps, found before the rules have run: drawn, and the steady-state steps framed
	 * (unless the user moved the view), while the findings list still says "analysing…".
	 */
	function showEarlySteps(f) {
		state.steps = f.steps;
		state.primaryPid = f.pid;
		state.procSteps = new Map([[f.pid, f.steps]]);
		stepsText(f);
		document.body.dataset.steps = 'early';
		if (!state.summary) return;
		if (!state.userMoved) showSteps();
		requestDraw();
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
			if (f.steps && !state.steps.length) showEarlySteps(f);
			await sleep(FINDINGS_POLL_MS);
		}
		if (f.status === 'ready') {
			state.findings = f.findings;
			state.steps = f.steps;
			state.primaryPid = f.pid;
			state.procSteps = new Map((f.processes || []).map((p) => [p.pid, p.steps]));
			stepsText(f);
		} else {
			state.analysisError = f.error || 'unknown error';
			document.getElementById('steps-text').textContent = '';
		}
		state.analysis = f.status === 'ready' ? 'ready' : 'error';
		state.findingsMs = performance.now() - state.started;
		renderFindings();
		layout();
		/* the first view: the steady-state steps, unless the user moved already */
		if (!state.userMoved) showSteps();
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
		renderLegend();
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
