/**
 * `npm start`. Only the Node.js version check runs before the server's modules load: they are behind a
 * dynamic import (a separate chunk in the build), so an old Node stops here with a clear message instead
 * of failing inside a dependency.
 */
import { exitUnlessSupportedNode } from '../node-version.js';
import { buildHttpNamespaceWithoutUndici } from './lean-http-namespace.js';

exitUnlessSupportedNode();
await buildHttpNamespaceWithoutUndici();
await import('./serve.js');
