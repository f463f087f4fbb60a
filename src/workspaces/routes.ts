import { z } from 'zod';
import { fileReply, type Api } from '../http/api.js';
import { smallUpload } from '../http/bytes.js';
import { NotFound } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { adminWorkspaceOut, adminWorkspacePatch, createWorkspaceBody, keysOut, profileBody, profileOut, reminderSettingsBody, reminderSettingsOut, workspaceOut } from './schema.js';
import { getProfile, LOGO_MAX_BYTES, logoOf, removeLogo, setLogo, updateProfile } from './profile.js';
import { createWorkspace, listWorkspaces, reminderSettings, rotateKeys, updateReminderSettings, updateWorkspaceStatus } from './service.js';

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

  const profile = z.object({ profile: profileOut });
  api.route(
    {
      method: 'get', path: '/workspace/profile', tag, auth: 'session', response: profile,
      summary: "The seller's details quotes show (page, mail, PDF), the defaults of new quotes, and the logo",
    },
    async ({ auth }) => ({ profile: await getProfile(db, auth.access) }),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/workspace/profile', tag, auth: 'session:owner', body: profileBody, response: profile,
      summary: 'Change the workspace profile (owner only); fields left out are kept, null or "" clears one',
      description:
        'legal_name, address (up to 8 lines), tax_number, email, phone and website are shown on every quote: its public page, its mail and ' +
        'its PDF. default_terms is shown under every quote\'s notes. default_validity_days sets valid_until of a new quote given none ' +
        '(that many days after its creation, UTC); default_currency is a new quote\'s currency when neither the request nor its channel names ' +
        'one. time_zone is the workspace\'s (PATCH /workspace shows it too). Markup is kept as text: the pages escape it, the PDF prints it.',
    },
    async ({ body, auth }) => ({ profile: await db.transaction((trx) => updateProfile(trx, auth.access, body)) }),
  );

  api.route(
    {
      method: ['put', 'post'], path: '/workspace/profile/logo', tag, auth: 'session:owner', response: profile,
      upload: { field: 'logo', types: ['image/png', 'image/jpeg'] },
      summary: 'Set the logo (owner only): a PNG or JPEG of at most 512 KB, as the raw body or the multipart field "logo"',
      description: 'The image is checked by its bytes, never by its name or declared type: anything but a readable PNG or JPEG (an SVG, a GIF, text named logo.png) is 422.',
      errors: { 408: 'The upload took longer than 30 s', 422: 'Not a PNG or JPEG, damaged, empty, or larger than 512 KB; the message names the field logo' },
    },
    async ({ ctx, auth }) => {
      const bytes = await smallUpload(ctx, 'logo', LOGO_MAX_BYTES);
      return { profile: await setLogo(db, auth.access, bytes) };
    },
  );

  api.route(
    {
      method: 'get', path: '/workspace/profile/logo', tag, auth: 'session', response: z.null(), produces: ['image/png', 'image/jpeg'],
      summary: 'The logo image (404 when none is set)',
    },
    async ({ auth }) => {
      const logo = await logoOf(db, auth.access);
      if (!logo) throw new NotFound('The workspace has no logo.');
      return fileReply(logo.type, logo.bytes);
    },
  );

  api.route(
    { method: 'delete', path: '/workspace/profile/logo', tag, auth: 'session:owner', response: profile, summary: 'Remove the logo (owner only)' },
    async ({ auth }) => ({ profile: await removeLogo(db, auth.access) }),
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
