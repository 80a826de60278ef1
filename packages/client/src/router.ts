// The API's router type. In this repository it is the server's own; the published package ships a
// declaration generated from it at build time (scripts/build.mjs), which needs nothing of the server.
export type { AppRouter } from '../../../routers/app.router.js';
