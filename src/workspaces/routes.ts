import { z } from 'zod';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { adminWorkspaceOut, adminWorkspacePatch, createWorkspaceBody, keysOut, reminderSettingsBody, reminderSettingsOut, workspaceOut } from './schema.js';
import { createWorkspace, listWorkspaces, reminderSettings, rotateKeys, updateReminderSettings, updateWorkspaceStatus } from './service.js';

export function workspaceRoutes(api: Api, { db, config }: AppDeps): void {
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

  const reminders = z.object({ reminders: reminderSettingsOut });
  const remindersNote =
    'Optional per workspace, off (null) by default: reminder_days days before a sent quote\'s valid_until (its last day, UTC), the worker ' +
    '(quoting worker; quoting serve itself on the embedded database) mails its customer once, and records a `reminded` activity. Never without SMTP_URL.';
  api.route(
    { method: 'get', path: '/workspace/reminders', tag, auth: 'session', summary: 'Reminders before a quote expires: reminder_days, null when off', description: remindersNote, response: reminders },
    async ({ auth }) => ({ reminders: await reminderSettings(db, auth.access) }),
  );
  api.route(
    {
      method: ['patch', 'put'], path: '/workspace/reminders', tag, auth: 'session:owner', body: reminderSettingsBody, response: reminders,
      summary: 'Set reminder_days (1 to 365) or null to turn reminders off (owner only)', description: remindersNote,
    },
    async ({ auth, body }) => ({ reminders: await updateReminderSettings(db, auth.access, body) }),
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
