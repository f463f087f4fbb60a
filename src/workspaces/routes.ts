import { z } from 'zod';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { adminWorkspaceOut, adminWorkspacePatch, createWorkspaceBody, keysOut, workspaceOut } from './schema.js';
import { createWorkspace, listWorkspaces, rotateKeys, updateWorkspaceStatus } from './service.js';

export function workspaceRoutes(api: Api, { db, config }: AppDeps): void {
  api.tag('Workspace', "The caller's workspace and its API keys");
  const tag = 'Workspace';

  api.route(
    {
      method: 'post', path: '/workspace', tag, auth: 'session:user', status: 201, body: createWorkspaceBody,
      summary: "Create the signed-in user's workspace; they become its owner. The secret key is shown this once",
      response: z.object({ workspace: workspaceOut, keys: keysOut }),
      errors: { 409: 'The user already has a workspace, or the slug is taken' },
    },
    async ({ body, auth }) => {
      return db.transaction((trx) => createWorkspace(trx, { name: body.name, slug: body.slug, ownerId: auth.user.id, trialDays: config.TRIAL_DAYS }));
    },
  );

  api.route(
    { method: 'get', path: '/workspace', tag, auth: 'session', summary: 'The workspace of the signed-in user (never the secret key)', response: z.object({ workspace: workspaceOut }) },
    async ({ auth }) => ({ workspace: auth.workspace }),
  );

  api.route(
    {
      method: 'post', path: '/workspace/keys/rotate', tag, auth: 'session:owner',
      summary: 'Issue a new key pair (owner only); the old public and secret keys stop working at once',
      response: z.object({ keys: keysOut }),
    },
    async ({ auth }) => ({ keys: await rotateKeys(db, auth.workspace.id) }),
  );

  api.route(
    {
      method: 'get', path: '/auth/key', tag, auth: 'key',
      summary: 'Identify the workspace of a key: `Authorization: Public pk_live_…` or `Authorization: Bearer sk_live_…`',
      description: 'Lets an integration check its credentials. Returns only what is public about the workspace.',
      response: z.object({ key_type: z.enum(['public', 'secret']), workspace: workspaceOut.pick({ id: true, name: true, slug: true, status: true }).meta({ id: 'WorkspaceIdentity' }) }),
    },
    async ({ auth }) => {
      const { id, name, slug, status } = auth.workspace;
      return { key_type: auth.keyType, workspace: { id, name, slug, status } };
    },
  );

  api.route(
    { method: 'get', path: '/admin/workspaces', tag: 'Ops', auth: 'admin', summary: 'Every workspace of this instance, with its user count and owner', response: z.object({ workspaces: z.array(adminWorkspaceOut) }) },
    async () => ({ workspaces: await listWorkspaces(db) }),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/admin/workspaces/{id}', tag: 'Ops', auth: 'admin', body: adminWorkspacePatch,
      summary: "Change a workspace's status or trial end (suspend, reactivate, extend a trial)",
      response: z.object({ workspace: workspaceOut }),
    },
    async ({ body, params }) => ({ workspace: await updateWorkspaceStatus(db, params.id, body) }),
  );
}
