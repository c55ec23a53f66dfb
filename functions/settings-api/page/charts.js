// Statistics charts (docs/settings.md "Statistics"): an endpoint's deliveries (24 h hourly or 7 d
// daily) in its card, and the organization's leads per day by source (30 d) in the overview.
// Inline SVG drawn with attributes only (the Content-Security-Policy forbids inline styles), hidden
// from screen readers: each chart has a caption with the totals and its figures as a table.

import { count, fill, h, problemAlert } from './dom.js';
import { api } from './session.js';

const SVG = 'http://www.w3.org/2000/svg';
const svg = (tag, attrs = {}, ...children) => {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  el.append(...children.flat().filter(Boolean));
  return el;
};

const hourLabel = new Intl.DateTimeFormat(undefined, { hour: 'numeric' });
const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });

/**
 * Stacked bars, one per bucket: `series` are [key, label, colour class] drawn bottom up. The
 * scale is the largest bucket's total; an all-zero window draws a baseline only.
 */
function bars(buckets, series, label) {
  const width = 480;
  const height = 96;
  const gap = 2;
  const slot = width / buckets.length;
  const totals = buckets.map((b) => series.reduce((sum, [key]) => sum + (b[key] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const rects = buckets.flatMap((b, i) => {
    let y = height;
    return series.map(([key, , tone]) => {
      const n = b[key] ?? 0;
      if (!n) return null;
      const barHeight = Math.max(1, (n / max) * (height - 4));
      y -= barHeight;
      return svg('rect', { x: (i * slot + gap / 2).toFixed(1), y: y.toFixed(1), width: Math.max(1, slot - gap).toFixed(1), height: barHeight.toFixed(1), class: `bar ${tone}` });
    });
  });
  return svg('svg', { viewBox: `0 0 ${width} ${height + 1}`, class: 'chart', 'aria-hidden': 'true', focusable: 'false', preserveAspectRatio: 'none', 'data-chart': label },
    svg('line', { x1: 0, y1: height + 0.5, x2: width, y2: height + 0.5, class: 'baseline' }), rects);
}

function legend(series) {
  return h('ul', { class: 'legend', 'aria-hidden': 'true' }, series.map(([, text, tone]) => h('li', {}, h('span', { class: `swatch ${tone}` }), text)));
}

/** The chart's figures as a table: what a screen reader reads instead of the bars. */
function figures(caption, buckets, columns, labelOf) {
  return h('details', { class: 'chart-table' },
    h('summary', { text: 'Show as a table' }),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
      h('table', { class: 'data' },
        h('caption', { class: 'visually-hidden', text: caption }),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Starting' }), columns.map(([, text]) => h('th', { scope: 'col', text })))),
        h('tbody', {}, buckets.map((b) => h('tr', {}, h('th', { scope: 'row', text: labelOf(b) }), columns.map(([key]) => h('td', { text: b[key] === null || b[key] === undefined ? '–' : count.format(b[key]) }))))))));
}

const DELIVERY_SERIES = [['delivered', 'Delivered', 'ok'], ['retrying', 'Retrying', 'warn'], ['failed', 'Failed', 'bad']];

/** An endpoint's chart with its window switch (24 h / 7 d), into `slot`. */
export async function endpointChart(endpoint, slot, window = '24h') {
  let stats;
  slot.setAttribute('aria-busy', 'true');
  try {
    stats = await api(`/webhooks/${encodeURIComponent(endpoint.id)}/stats?window=${window}`);
  } catch (error) {
    if (error.status !== 401) fill(slot, problemAlert(error));
    slot.setAttribute('aria-busy', 'false');
    return;
  }
  const { delivered, failed, retrying, success_rate: rate } = stats.totals;
  const title = window === '24h' ? 'Deliveries, last 24 hours' : 'Deliveries, last 7 days';
  const latency = stats.buckets.reduce((worst, b) => (b.p95_ms !== null && b.p95_ms > worst ? b.p95_ms : worst), -1);
  const summary = `${count.format(delivered)} delivered, ${count.format(failed)} failed, ${count.format(retrying)} retried`
    + (rate === null ? '' : ` · ${(rate * 100).toFixed(1)}% success`) + (latency >= 0 ? ` · slowest hour p95 ≤ ${count.format(latency)} ms` : '');
  const switcher = h('div', { class: 'segmented', role: 'group', 'aria-label': `Window of the chart for ${endpoint.url}` },
    ['24h', '7d'].map((w) => h('button', {
      type: 'button', class: 'btn subtle small', 'aria-pressed': String(w === window),
      onclick: () => endpointChart(endpoint, slot, w),
    }, w === '24h' ? '24 h' : '7 days')));
  const labelOf = (b) => (window === '24h' ? hourLabel : dayLabel).format(new Date(b.start));
  fill(slot, h('figure', { class: 'stats-chart', 'data-testid': 'endpoint-chart' },
    h('div', { class: 'chart-head' }, h('figcaption', {}, h('span', { class: 'chart-title', text: title }), h('span', { class: 'muted small', text: summary })), switcher),
    bars(stats.buckets, DELIVERY_SERIES, title), legend(DELIVERY_SERIES),
    figures(`${title} for ${endpoint.url}`, stats.buckets, [...DELIVERY_SERIES, ['p50_ms', 'p50 (ms)'], ['p95_ms', 'p95 (ms)']], labelOf)));
  slot.setAttribute('aria-busy', 'false');
}

const LEAD_SERIES = [['lead_endpoint', 'Lead endpoint', 'accent'], ['page_key', 'Page script', 'ok'], ['no_script_form', 'No-script form', 'warn']];

/** The organization's leads per day by source, into `slot`. */
export async function leadsChart(slot) {
  let stats;
  try {
    stats = await api('/leads/stats?window=30d');
  } catch (error) {
    if (error.status !== 401) fill(slot, problemAlert(error));
    return;
  }
  const buckets = stats.buckets.map((b) => ({ start: b.start, ...b.by_source }));
  const title = 'Leads, last 30 days';
  fill(slot, h('figure', { class: 'stats-chart', 'data-testid': 'leads-chart' },
    h('div', { class: 'chart-head' }, h('figcaption', {}, h('span', { class: 'chart-title', text: title }), h('span', { class: 'muted small', text: `${count.format(stats.totals.leads)} new lead${stats.totals.leads === 1 ? '' : 's'}` }))),
    bars(buckets, LEAD_SERIES, title), legend(LEAD_SERIES),
    figures(title, buckets, LEAD_SERIES, (b) => dayLabel.format(new Date(b.start)))));
}
