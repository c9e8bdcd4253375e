import { clock, compact } from './format.js';

/** Okabe–Ito: told apart with every common colour-vision deficiency. */
const PALETTE = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#d55e00', '#56b4e9', '#4d4d4d'];
/** Past the palette, lines differ by dash too. */
const DASHES = ['', '6 3', '2 3', '8 3 2 3'];

export function seriesStyle(index: number): { colour: string; dash: string } {
  return {
    colour: PALETTE[index % PALETTE.length]!,
    dash: DASHES[Math.floor(index / PALETTE.length) % DASHES.length]!,
  };
}

export interface Series {
  name: string;
  /** [time ms, value]; null leaves a gap. */
  points: Array<[number, number | null]>;
}

export interface ChartSpec {
  title: string;
  /** Formats a value for the legend (the current value) and the tooltip. */
  format: (value: number) => string;
  /** Formats the y axis's ticks (short); default 1.2k style. */
  tick?: (value: number) => string;
  series: Series[];
  /** Shown when no series has a point. */
  empty: string;
}

export interface TimeWindow {
  from: number;
  to: number;
  /** Points further apart than this are not joined. */
  maxGapMs: number;
}

const HEIGHT = 150;
const MARGIN = { top: 10, right: 10, bottom: 22, left: 44 };

// The HTML parser puts <svg> in the SVG namespace; spelled out, the namespace would be a URL in a
// page that otherwise names none.
const SVG_NS = (() => {
  const template = document.createElement('template');
  template.innerHTML = '<svg></svg>';
  return template.content.firstElementChild!.namespaceURI!;
})();

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number> = {},
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag) as SVGElementTagNameMap[K];
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, String(value));
  return el;
}

/** A round upper bound for the y axis and its step (1, 2, 2.5 or 5 × 10^k), 2–5 steps. */
export function niceScale(max: number): { top: number; step: number } {
  if (!(max > 0)) return { top: 1, step: 0.5 };
  const rough = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= rough)!;
  return { top: Math.ceil(max / step) * step, step };
}

/**
 * Draws `spec` into `figure` (a <figure> with a <figcaption>, an <svg> slot and a legend list):
 * a time axis over `window`, a y axis from 0 with round ticks, one line per series, the current
 * value of each in the legend. Sized to the figure's width; call again on resize.
 */
export function drawLineChart(figure: HTMLElement, spec: ChartSpec, window: TimeWindow): void {
  const width = Math.max(220, Math.floor(figure.clientWidth || 320));
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (t: number) => MARGIN.left + ((t - window.from) / (window.to - window.from)) * plotW;

  const visible = spec.series.map((s) => ({
    ...s,
    points: s.points.filter(([t]) => t >= window.from && t <= window.to),
  }));
  let max = 0;
  for (const s of visible) for (const [, v] of s.points) if (v !== null && v > max) max = v;
  const { top, step } = niceScale(max);
  const y = (v: number) => MARGIN.top + plotH - (v / top) * plotH;

  const root = svg('svg', {
    viewBox: `0 0 ${width} ${HEIGHT}`,
    width,
    height: HEIGHT,
    role: 'img',
    class: 'plot',
  });
  const current = visible.map((s) => `${s.name} ${currentText(spec, s, window)}`).join(', ');
  root.setAttribute('aria-label', `${spec.title}, last 15 minutes: ${current || spec.empty}`);

  // Y grid and labels.
  for (let v = 0; v <= top + step / 2; v += step) {
    const py = y(v);
    root.append(
      svg('line', { x1: MARGIN.left, x2: width - MARGIN.right, y1: py, y2: py, class: 'grid' }),
    );
    const label = svg('text', {
      x: MARGIN.left - 6,
      y: py + 4,
      class: 'tick',
      'text-anchor': 'end',
    });
    label.textContent = (spec.tick ?? compact)(v);
    root.append(label);
  }
  // Time axis: a tick every 5 minutes of the clock, and the 15-minute span itself.
  root.append(
    svg('line', {
      x1: MARGIN.left,
      x2: width - MARGIN.right,
      y1: MARGIN.top + plotH,
      y2: MARGIN.top + plotH,
      class: 'axis',
    }),
  );
  const fiveMinutes = 5 * 60_000;
  for (
    let t = Math.ceil(window.from / fiveMinutes) * fiveMinutes;
    t <= window.to;
    t += fiveMinutes
  ) {
    const px = x(t);
    root.append(
      svg('line', { x1: px, x2: px, y1: MARGIN.top, y2: MARGIN.top + plotH, class: 'grid' }),
    );
    const label = svg('text', { x: px, y: HEIGHT - 6, class: 'tick', 'text-anchor': 'middle' });
    label.textContent = clock(t);
    root.append(label);
  }

  const slot = figure.querySelector('.plot-slot');
  const legend = figure.querySelector('ul.series');
  if (!slot || !legend) throw new Error(`chart #${figure.id} lacks its .plot-slot or ul.series`);
  legend.replaceChildren();
  const caption = figure.querySelector('figcaption');
  if (caption) caption.textContent = spec.title;
  const values: HTMLElement[] = [];
  visible.forEach((s, index) => {
    const { colour, dash } = seriesStyle(index);
    const d = pathOf(s.points, x, y, window.maxGapMs);
    if (d) {
      const attributes: Record<string, string> = { d, stroke: colour, class: 'line' };
      if (dash) attributes['stroke-dasharray'] = dash;
      root.append(svg('path', attributes));
      const last = lastPoint(s.points);
      if (last)
        root.append(svg('circle', { cx: x(last[0]), cy: y(last[1]), r: 2.5, fill: colour }));
    }
    const li = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = dash ? 'swatch dashed' : 'swatch';
    swatch.style.setProperty('--c', colour);
    const name = document.createElement('span');
    name.className = 'name';
    name.textContent = s.name;
    const value = document.createElement('span');
    value.className = 'value';
    value.textContent = currentText(spec, s, window);
    values.push(value);
    li.append(swatch, name, value);
    legend.append(li);
  });
  if (visible.every((s) => s.points.every(([, v]) => v === null))) {
    const note = svg('text', {
      x: MARGIN.left + plotW / 2,
      y: MARGIN.top + plotH / 2,
      class: 'empty',
      'text-anchor': 'middle',
    });
    note.textContent = spec.empty;
    root.append(note);
  }

  followPointer(root, { visible, values, spec, width, x, window, caption });
  slot.replaceChildren(root);
}

/**
 * Under the pointer: a vertical line at the nearest sample, the legend showing that sample's
 * values and the caption its time; back to the current values when the pointer leaves.
 */
function followPointer(
  root: SVGSVGElement,
  chart: {
    visible: Series[];
    values: HTMLElement[];
    spec: ChartSpec;
    width: number;
    x: (t: number) => number;
    window: TimeWindow;
    caption: Element | null;
  },
): void {
  const { visible, values, spec, width, x, window, caption } = chart;
  const times = [...new Set(visible.flatMap((s) => s.points.map(([t]) => t)))].sort(
    (a, b) => a - b,
  );
  if (times.length === 0) return;
  const cursor = svg('line', {
    y1: MARGIN.top,
    y2: HEIGHT - MARGIN.bottom,
    class: 'cursor',
    visibility: 'hidden',
  });
  root.append(cursor);
  const show = (t: number | null) => {
    visible.forEach((s, i) => {
      values[i]!.textContent =
        t === null
          ? currentText(spec, s, window)
          : formatOrDash(spec, s.points.find(([pt]) => pt === t)?.[1] ?? null);
    });
    if (caption)
      caption.textContent = t === null ? spec.title : `${spec.title} · ${clock(t, true)}`;
    cursor.setAttribute('visibility', t === null ? 'hidden' : 'visible');
    if (t !== null) {
      cursor.setAttribute('x1', x(t).toFixed(1));
      cursor.setAttribute('x2', x(t).toFixed(1));
    }
  };
  root.addEventListener('pointermove', (event) => {
    const box = root.getBoundingClientRect();
    const px = ((event.clientX - box.left) * width) / Math.max(box.width, 1);
    const plotW = width - MARGIN.left - MARGIN.right;
    const t = window.from + ((px - MARGIN.left) / plotW) * (window.to - window.from);
    let nearest = times[0]!;
    for (const candidate of times)
      if (Math.abs(candidate - t) < Math.abs(nearest - t)) nearest = candidate;
    show(nearest);
  });
  root.addEventListener('pointerleave', () => show(null));
}

/** The latest value, or when the line has ended (a node that left) since when. */
function currentText(spec: ChartSpec, series: Series, window: TimeWindow): string {
  const last = lastPoint(series.points);
  if (!last) return '–';
  if (last[0] < window.to - window.maxGapMs) return `– since ${clock(last[0])}`;
  return spec.format(last[1]);
}

function formatOrDash(spec: ChartSpec, value: number | null): string {
  return value === null ? '–' : spec.format(value);
}

function lastPoint(points: Array<[number, number | null]>): [number, number] | null {
  for (let i = points.length - 1; i >= 0; i--) {
    const [t, v] = points[i]!;
    if (v !== null) return [t, v];
  }
  return null;
}

/** "M x y L x y …", a new M after a null or a gap longer than `maxGapMs`. */
export function pathOf(
  points: Array<[number, number | null]>,
  x: (t: number) => number,
  y: (v: number) => number,
  maxGapMs: number,
): string {
  const parts: string[] = [];
  let previous: number | null = null;
  for (const [t, v] of points) {
    if (v === null) {
      previous = null;
      continue;
    }
    const command = previous === null || t - previous > maxGapMs ? 'M' : 'L';
    parts.push(`${command}${x(t).toFixed(1)} ${y(v).toFixed(1)}`);
    previous = t;
  }
  return parts.join(' ');
}
