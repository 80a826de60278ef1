/**
 * The eight scopes of a personal token (spec, Authentication item 5). API keys and sessions carry
 * no scope list: they hold every scope, limited only by the key's access level or the user's role.
 */
export const SCOPES = [
  'deploy:write',
  'logs:read',
  'env:read',
  'env:write',
  'db:manage',
  'project:read',
  'project:write',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What a procedure declares in its meta (`meta: {scope}`): one of the scopes, `public` (no
 * credentials: health, signup, signin) or `session` (a signed-in user only, never a token or a key:
 * the account's own credentials and second factor).
 */
export const PROCEDURE_SCOPES = [...SCOPES, 'public', 'session'] as const;
export type ProcedureScope = (typeof PROCEDURE_SCOPES)[number];

export const SCOPE_DESCRIPTIONS: Record<ProcedureScope, string> = {
  'deploy:write': 'trigger deployments and rollbacks',
  'logs:read': 'stream deployment and service logs',
  'env:read': 'read environment variables',
  'env:write': 'create and update environment variables',
  'db:manage': 'create, modify and delete databases and storage instances; browse and edit their data',
  'project:read': 'read project information',
  'project:write': 'create and modify projects',
  admin: 'full administrative access',
  public: 'no credentials needed',
  session: 'a signed-in user (session cookie or session token) only; never a personal token or an API key',
};

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];
