/**
 * Labels as a person types them, one `key=value` a line, and back. Blank lines and `#` comments are
 * skipped; the API checks the keys and values themselves and names the label it refuses.
 */
export type LabelsParse = { ok: true; labels: Record<string, string> } | { ok: false; line: number; message: string };

export function parseLabels(text: string): LabelsParse {
  const labels: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return { ok: false, line: i + 1, message: `Line ${i + 1}: write key=value` };
    const key = line.slice(0, eq).trim();
    if (key in labels) return { ok: false, line: i + 1, message: `Line ${i + 1}: ${key} is given twice` };
    labels[key] = line.slice(eq + 1).trim();
  }
  return { ok: true, labels };
}

/** The labels a person may change: the platform's own (`slipway.*`) are shown apart and kept. */
export function userLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([k]) => !k.startsWith('slipway.')));
}

export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}
