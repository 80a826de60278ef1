/**
 * The oldest Node.js the platform runs on: MikroORM 7 and better-sqlite3 13 need 22.17. No imports, so
 * the entry points can check it before loading anything that would fail on an older Node with a cryptic
 * error (or, with better-sqlite3 on the wrong ABI, an abort).
 */
export const MIN_NODE = { major: 22, minor: 17 } as const;

export function unsupportedNodeMessage(version: string = process.versions.node): string | null {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > MIN_NODE.major || (major === MIN_NODE.major && minor >= MIN_NODE.minor)) return null;
  return (
    `Slipway needs Node.js ${MIN_NODE.major}.${MIN_NODE.minor} or newer (supported: 22.17+, 24, 26); this is Node.js ${version}.\n` +
    `Start it with \`npm start\` (which fetches a supported Node into .node/ when the machine's is older) or install Node.js ${MIN_NODE.major}.${MIN_NODE.minor}+.\n`
  );
}

/** Stops the process at once, with exit code 1, on a Node older than MIN_NODE. */
export function exitUnlessSupportedNode(): void {
  const message = unsupportedNodeMessage();
  if (message === null) return;
  process.stderr.write(message);
  process.exit(1);
}
