import type { Db } from '../db/database.js';
import { Conflict, NotFound } from '../errors.js';
import { randomToken, safeEqual, sha256 } from '../crypto.js';
import { workspaceColumns } from './model.js';
import type { Workspace, WorkspaceStatus } from '../accounts.js';
import { authChanged } from './auth-changes.js';
import type { WorkspaceSettings } from './schema.js';
import type { Access } from '../access.js';

export interface KeyPair {
  public_key: string;
  secret_key: string;
}

function newKeyPair(): KeyPair {
  return { public_key: `pk_live_${randomToken(24)}`, secret_key: `sk_live_${randomToken(32)}` };
}

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return slug || 'workspace';
}

async function freeSlug(db: Db, base: string): Promise<string> {
  const taken = new Set(
    (await db('workspaces').where('slug', base).orWhere('slug', 'like', `${base}-%`).pluck('slug')) as string[],
  );
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

/**
 * Creates a workspace owned by `ownerId` and returns it with its keys (the secret is shown this once).
 * `trialDays` undefined starts the workspace `active`; otherwise `trialing` until the trial ends.
 */
export async function createWorkspace(
  db: Db,
  input: { name: string; slug?: string; ownerId: number; trialDays?: number },
): Promise<{ workspace: Workspace; keys: KeyPair }> {
  const owner = await db('users').where({ id: input.ownerId }).comment('all workspaces: the owner-to-be has none yet').forUpdate().first('workspace_id');
  if (owner?.workspace_id) throw new Conflict('You already have a workspace.');
  // Slugs are chosen by looking at the taken ones, so concurrent creations queue here until the
  // chooser commits; otherwise two workspaces named alike would race for the same slug (a 409).
  await db.raw('select pg_advisory_xact_lock(hashtext(?))', ['quoting:workspace-slugs']);
  let slug = input.slug;
  if (slug) {
    if (await db('workspaces').where({ slug }).first('id')) throw new Conflict(`The slug "${slug}" is already taken.`);
  } else {
    slug = await freeSlug(db, slugify(input.name));
  }
  const keys = newKeyPair();
  const trialing = input.trialDays !== undefined;
  const [workspace] = (await db('workspaces')
    .insert({
      name: input.name,
      slug,
      status: trialing ? 'trialing' : 'active',
      trial_ends_at: trialing ? new Date(Date.now() + input.trialDays! * 86_400_000) : null,
      public_key: keys.public_key,
      secret_key_hash: sha256(keys.secret_key),
    })
    .returning(workspaceColumns)) as Workspace[];
  await db('users').where({ id: input.ownerId }).queryContext({ allWorkspaces: 'the owner joins the new workspace' }).update({ workspace_id: workspace.id, role: 'owner', updated_at: db.fn.now() });
  await authChanged(db, { userId: input.ownerId }); // the owner's sessions now have a workspace
  return { workspace, keys };
}

export async function findWorkspaceBySlug(db: Db, slug: string): Promise<Workspace | undefined> {
  return (await db('workspaces').where({ slug }).first(workspaceColumns)) as Workspace | undefined;
}

/** Issues a new key pair; the old public and secret keys stop working at once. */
export async function rotateKeys(db: Db, workspaceId: number): Promise<KeyPair> {
  const keys = newKeyPair();
  const updated = await db('workspaces')
    .where({ id: workspaceId })
    .update({ public_key: keys.public_key, secret_key_hash: sha256(keys.secret_key), updated_at: db.fn.now() });
  if (!updated) throw new NotFound('Workspace not found.');
  await authChanged(db, { workspaceId });
  return keys;
}

export async function findByPublicKey(db: Db, key: string): Promise<Workspace | null> {
  const workspace = (await db('workspaces').where({ public_key: key }).first(workspaceColumns)) as Workspace | undefined;
  return workspace && safeEqual(workspace.public_key, key) ? workspace : null;
}

/** Looks the key up by its SHA-256 hash, then compares the hashes in constant time. */
export async function findBySecretKey(db: Db, key: string): Promise<Workspace | null> {
  const hash = sha256(key);
  const row = await db('workspaces').where({ secret_key_hash: hash }).first([...workspaceColumns, 'secret_key_hash']);
  if (!row || !safeEqual(row.secret_key_hash, hash)) return null;
  const { secret_key_hash: _omit, ...workspace } = row;
  return workspace as Workspace;
}

export interface WorkspaceSummary extends Workspace {
  users: number;
  owner_email: string | null;
}

export async function listWorkspaces(db: Db): Promise<WorkspaceSummary[]> {
  return (await db('workspaces as w')
    .select(workspaceColumns.map((c) => `w.${c}`))
    .select(
      db.raw('(select count(*)::int from users u where u.workspace_id = w.id) as users'),
      db.raw(`(select u.email from users u where u.workspace_id = w.id and u.role = 'owner' order by u.id limit 1) as owner_email`),
    )
    .orderBy('w.id')
    .comment('all workspaces: the operator lists them')) as WorkspaceSummary[];
}

export async function updateWorkspaceStatus(
  db: Db,
  id: number,
  changes: { status?: WorkspaceStatus; trial_ends_at?: Date | null },
): Promise<Workspace> {
  const [workspace] = (await db('workspaces')
    .where({ id })
    .update({ ...changes, updated_at: db.fn.now() })
    .returning(workspaceColumns)) as Workspace[];
  if (!workspace) throw new NotFound('Workspace not found.');
  await authChanged(db, { workspaceId: id });
  return workspace;
}

/**
 * The owner renames the workspace or sets the time zone its pages show dates in (null: UTC). Cached sessions
 * carry the workspace, so they are evicted: the next page shows the change.
 */
export async function updateWorkspaceSettings(db: Db, access: Access, changes: WorkspaceSettings): Promise<Workspace> {
  const workspaceId = access.workspaceId;
  const given = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined));
  const [workspace] = (await db('workspaces')
    .where({ id: workspaceId })
    .update({ ...given, updated_at: db.fn.now() })
    .returning(workspaceColumns)) as Workspace[];
  if (!workspace) throw new NotFound('Workspace not found.');
  await authChanged(db, { workspaceId });
  return workspace;
}

/** The workspace's reminders before expiry: `reminder_days`, null when off. */
export async function reminderSettings(db: Db, access: Access): Promise<{ reminder_days: number | null }> {
  const row = await db('workspaces').where({ id: access.workspaceId }).first('reminder_days');
  if (!row) throw new NotFound('Workspace not found.');
  return { reminder_days: row.reminder_days };
}

/** Sets (or, with null, turns off) the reminders before expiry; undefined leaves them as they are. */
export async function updateReminderSettings(db: Db, access: Access, changes: { reminder_days?: number | null }): Promise<{ reminder_days: number | null }> {
  if (changes.reminder_days !== undefined) {
    await db('workspaces').where({ id: access.workspaceId }).update({ reminder_days: changes.reminder_days });
  }
  return reminderSettings(db, access);
}
