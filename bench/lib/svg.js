// The results chart: one panel of horizontal bars per workload, req/s, no
// dependencies. Bars are scaled per panel; values are printed on the bars.

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

export const COLORS = { spawnpool: '#e8590c', native: '#1971c2', node: '#868e96', other: '#2f9e44' };

/** Color of a contender's bar by its id. */
export function colorOf(id) {
  if (id === 'spawnpool') return COLORS.spawnpool;
  if (id === 'go' || id === 'rust') return COLORS.native;
  if (id === 'bun' || id === 'deno') return COLORS.other;
  return COLORS.node;
}

/**
 * Render the chart.
 * panels: [{ title, unit, bars: [{ id, label, value (number|null), note }] }]
 */
export function renderSvg({ title, subtitle = '', panels, footer = '' }) {
  const W = 820;
  const labelW = 260;
  const barMax = W - labelW - 190; // room for the value text
  const barH = 20;
  const gap = 6;
  let y = 78;
  const parts = [];
  for (const p of panels) {
    parts.push(`<text x="16" y="${y}" class="h2">${esc(p.title)}</text>`);
    y += 12;
    const max = Math.max(1, ...p.bars.map((b) => b.value ?? 0));
    for (const b of p.bars) {
      const cy = y + barH / 2 + 4;
      parts.push(`<text x="${labelW - 10}" y="${cy}" class="label" text-anchor="end">${esc(b.label)}</text>`);
      if (b.value == null) {
        parts.push(`<text x="${labelW}" y="${cy}" class="na">${esc(b.note ?? 'n/a')}</text>`);
      } else {
        const w = Math.max(1, Math.round((b.value / max) * barMax));
        parts.push(`<rect x="${labelW}" y="${y}" width="${w}" height="${barH}" rx="2" fill="${colorOf(b.id)}"/>`);
        const text = `${Math.round(b.value).toLocaleString('en-US')}${p.unit ? ` ${p.unit}` : ''}${b.note ? ` · ${b.note}` : ''}`;
        parts.push(`<text x="${labelW + w + 6}" y="${cy}" class="value">${esc(text)}</text>`);
      }
      y += barH + gap;
    }
    y += 22;
  }
  const H = y + (footer ? 10 : 0);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="-apple-system,Segoe UI,Helvetica,Arial,sans-serif">`,
    '<style>.h1{font-size:17px;font-weight:600;fill:#212529}.h2{font-size:14px;font-weight:600;fill:#343a40}' +
      '.sub{font-size:12px;fill:#495057}.label{font-size:12px;fill:#212529}.value{font-size:11px;fill:#343a40}' +
      '.na{font-size:11px;fill:#868e96;font-style:italic}.foot{font-size:10.5px;fill:#868e96}</style>',
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="16" y="24" class="h1">${esc(title)}</text>`,
    `<text x="16" y="42" class="sub">${esc(subtitle)}</text>`,
    ...parts,
    footer ? `<text x="16" y="${H - 10}" class="foot">${esc(footer)}</text>` : '',
    '</svg>',
    '',
  ].join('\n');
}
