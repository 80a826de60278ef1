/** `npm run cli`: the Node.js version check first, then the commands (see run.ts), loaded only on a supported Node. */
import { exitUnlessSupportedNode } from '../node-version.js';

exitUnlessSupportedNode();
await import('./run.js');
