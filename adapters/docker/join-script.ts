import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MARKER = /^\s*# @@PROVISION_DOCKER@@.*$/m;

/** scripts/cluster/join-node.sh above this module: it runs from adapters/docker (tsx) or dist/adapters/http (bundle). */
function findScripts(from = path.dirname(fileURLToPath(import.meta.url))): { join: string; provision: string } | null {
  let dir = from;
  for (let i = 0; i < 5; i++) {
    const join = path.join(dir, 'scripts', 'cluster', 'join-node.sh');
    const provision = path.join(dir, 'scripts', 'provision', 'docker.sh');
    if (existsSync(join) && existsSync(provision)) return { join, provision };
    dir = path.dirname(dir);
  }
  return null;
}

/**
 * The join script as GET /api/servers/join.sh serves it: scripts/cluster/join-node.sh with the engine
 * provisioning `npm start` uses (scripts/provision/docker.sh) put inside, base64-encoded, so a new
 * machine installs its engine exactly as the platform's host did. Read once; the join command
 * carries its digest.
 */
export function joinScriptLoader(): () => Promise<string> {
  let text: Promise<string> | null = null;
  return () => {
    text ??= (async () => {
      const found = findScripts();
      if (!found) throw new Error('scripts/cluster/join-node.sh is not part of this install');
      const [join, provision] = await Promise.all([readFile(found.join, 'utf8'), readFile(found.provision)]);
      if (!MARKER.test(join)) throw new Error('join-node.sh has no place for the engine provisioning');
      const embedded = `  local f; f=$(mktemp); printf '%s' '${provision.toString('base64')}' | base64 -d >"$f"; bash "$f"; rm -f "$f"; return 0`;
      return join.replace(MARKER, () => embedded);
    })().catch((error: unknown) => {
      text = null;
      throw error;
    });
    return text;
  };
}
