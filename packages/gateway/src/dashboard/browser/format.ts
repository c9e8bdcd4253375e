const number = new Intl.NumberFormat();

export function fmt(n: number | null | undefined, digits?: number): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return digits === undefined ? number.format(n) : n.toFixed(digits);
}

export function ms(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  if (n < 10) return `${n.toFixed(2)} ms`;
  return n < 1000 ? `${n.toFixed(0)} ms` : `${(n / 1000).toFixed(2)} s`;
}

/** An axis label for milliseconds: "500 ms", "1.5 s". */
export function msTick(n: number): string {
  return n >= 1000 ? `${compact(n / 1000)} s` : `${compact(n)} ms`;
}

/** 1234 → "1.2k": short enough for an axis label. */
export function compact(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e9) return `${trim(n / 1e9)}G`;
  if (abs >= 1e6) return `${trim(n / 1e6)}M`;
  if (abs >= 1e3) return `${trim(n / 1e3)}k`;
  return trim(n);
}

function trim(n: number): string {
  const abs = Math.abs(n);
  const text =
    abs >= 100 || Number.isInteger(n) ? n.toFixed(0) : abs >= 10 ? n.toFixed(1) : n.toFixed(2);
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

export function span(msValue: number): string {
  const s = Math.max(0, Math.round(msValue / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function ago(at: number, now: number): string {
  const d = now - at;
  return d < 10000 ? `${(Math.max(0, d) / 1000).toFixed(1)} s ago` : `${span(d)} ago`;
}

/** "14:05" (or "14:05:30" with seconds) in the browser's time zone. */
export function clock(at: number, seconds = false): string {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, '0');
  const time = `${two(d.getHours())}:${two(d.getMinutes())}`;
  return seconds ? `${time}:${two(d.getSeconds())}` : time;
}
