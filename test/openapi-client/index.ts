// openapi-typescript, loaded from this workspace's node_modules: it drives TypeScript 5's compiler API,
// which sits there beside it (the repository itself compiles with TypeScript 7, which has no such API).
export { astToString, default as openapiTS } from 'openapi-typescript';
