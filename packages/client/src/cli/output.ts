/** What a command prints: tables and lines for people, one JSON document (or JSON lines for streams) with --json. */
export interface Output {
  json: boolean;
  /** A result: `human` for people, `value` as JSON. */
  result(value: unknown, human: () => string): void;
  /** One event of a stream: a line for people, a JSON line with --json. */
  event(value: unknown, human: string): void;
  /** A note for people on stderr (never with --json, so stdout stays parseable). */
  note(text: string): void;
  /** A line that rewrites itself while waiting, on a terminal only; `done` clears it. */
  progress(text: string): { update(text: string): void; done(): void };
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export function createOutput(
  json: boolean,
  stdout: NodeJS.WriteStream = process.stdout,
  stderr: NodeJS.WriteStream = process.stderr,
): Output {
  return {
    json,
    result(value, human) {
      stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
    },
    event(value, human) {
      stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
    },
    note(text) {
      if (!json) stderr.write(`${text}\n`);
    },
    progress(initial) {
      if (json) return { update() {}, done() {} };
      if (!stderr.isTTY) {
        // Not a terminal (CI): one line, no animation.
        stderr.write(`${initial}\n`);
        return { update() {}, done() {} };
      }
      let text = initial;
      let frame = 0;
      const draw = () => stderr.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${text}`);
      draw();
      const timer = setInterval(draw, 100);
      timer.unref();
      return {
        update(next) {
          text = next;
        },
        done() {
          clearInterval(timer);
          stderr.write('\r\x1b[2K');
        },
      };
    },
  };
}

/** Columns padded to their widest cell; an empty table says so. */
export function table(headers: string[], rows: Array<Array<string | number | boolean | null | undefined>>, empty = '(none)'): string {
  if (rows.length === 0) return empty;
  const cells = [headers, ...rows.map((row) => row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}
