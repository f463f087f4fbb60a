import PDFDocument from 'pdfkit';
import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';
import { NotFound, Validation } from '../errors.js';
import { authChanged } from './auth-changes.js';
import type { ProfileChanges } from './schema.js';

/**
 * The workspace profile: the seller's details its quotes show (page, mail, PDF), the defaults of its new quotes,
 * and its logo. One row per workspace in workspace_profiles, none until the owner first saves; the time zone
 * stays the workspace's own column (the app's dates read it from the session's workspace).
 */

export const LOGO_MAX_BYTES = 512 * 1024;
export type LogoType = 'image/png' | 'image/jpeg';

const textColumns = ['legal_name', 'address', 'tax_number', 'email', 'phone', 'website', 'default_terms'] as const;
const profileColumns = [...textColumns, 'default_validity_days', 'default_currency'] as const;

export interface Profile {
  legal_name: string | null;
  address: string | null;
  tax_number: string | null;
  email: string | null;
  phone: string | null;
  website: string | null;
  default_terms: string | null;
  default_validity_days: number | null;
  default_currency: string | null;
  time_zone: string | null;
  logo: { type: LogoType; bytes: number; updated_at: string; url: string } | null;
  updated_at: string | null;
}

/** What a quote's page, mail and PDF say of its seller: the workspace name and whatever of the profile is set. */
export interface Seller {
  /** The workspace's name: what the page showed before there were profiles. */
  name: string;
  legal_name: string | null;
  address: string | null;
  tax_number: string | null;
  email: string | null;
  phone: string | null;
  website: string | null;
  terms: string | null;
  time_zone: string | null;
  /** Set when the workspace has a logo (its bytes are read separately, by logoOf). */
  logo_updated_at: string | null;
}

const iso = (value: unknown) => (value == null ? null : new Date(value as string).toISOString());

/** GET /workspace/profile: every field, null where unset. */
export async function getProfile(db: Db, access: Access): Promise<Profile> {
  const workspace = await db('workspaces').where({ id: access.workspaceId }).first('time_zone');
  if (!workspace) throw new NotFound('Workspace not found.');
  const row = await scoped(db, 'workspace_profiles', access.workspaceId).first(
    ...profileColumns, 'logo_type', 'logo_updated_at', 'updated_at', db.raw('octet_length(logo) as logo_bytes'),
  );
  const blank = Object.fromEntries(profileColumns.map((c) => [c, null])) as Record<(typeof profileColumns)[number], null>;
  return {
    ...blank,
    ...(row ? Object.fromEntries(profileColumns.map((c) => [c, row[c] ?? null])) : {}),
    time_zone: workspace.time_zone ?? null,
    logo: row?.logo_type
      ? { type: row.logo_type, bytes: Number(row.logo_bytes), updated_at: iso(row.logo_updated_at)!, url: '/api/v1/workspace/profile/logo' }
      : null,
    updated_at: iso(row?.updated_at),
  } as Profile;
}

/** PATCH/PUT /workspace/profile (the owner): the fields given are set (null or empty clears one), the others kept. */
export async function updateProfile(db: Db, access: Access, changes: ProfileChanges): Promise<Profile> {
  const { time_zone, ...fields } = changes;
  const given = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  if (Object.keys(given).length) {
    await db('workspace_profiles')
      .insert({ workspace_id: access.workspaceId, ...given })
      .onConflict('workspace_id')
      .merge({ ...given, updated_at: db.fn.now() });
  }
  if (time_zone !== undefined) {
    await db('workspaces').where({ id: access.workspaceId }).update({ time_zone, updated_at: db.fn.now() });
    await authChanged(db, { workspaceId: access.workspaceId }); // cached sessions carry the workspace's time zone
  }
  return getProfile(db, access);
}

/**
 * What the bytes are, by their first bytes and never by a file name or a declared type: PNG (its signature then
 * an IHDR chunk) or JPEG (SOI then a marker). Anything else (SVG, GIF, a PDF, text named logo.png) is null.
 */
export function logoType(bytes: Buffer): LogoType | null {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (bytes.length > 24 && bytes.subarray(0, 8).equals(png) && bytes.toString('latin1', 12, 16) === 'IHDR') return 'image/png';
  if (bytes.length > 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff && bytes[3] >= 0xc0) return 'image/jpeg';
  return null;
}

/** Whether the image decodes as the PDFs draw it (pdfkit's PNG and JPEG readers), at a sane size. */
function drawable(bytes: Buffer): boolean {
  try {
    const doc = new PDFDocument({ autoFirstPage: false });
    const image = (doc as unknown as { openImage(src: Buffer): { width: number; height: number } }).openImage(bytes);
    return image.width > 0 && image.height > 0 && image.width <= 10_000 && image.height <= 10_000;
  } catch {
    return false;
  }
}

/** Stores the logo (the owner): a corrupt file is refused here rather than missing from every PDF later. */
export async function setLogo(db: Db, access: Access, bytes: Buffer): Promise<Profile> {
  if (bytes.length === 0) throw new Validation('logo', 'logo: the upload is empty; send a PNG or JPEG image.');
  if (bytes.length > LOGO_MAX_BYTES) throw new Validation('logo', `logo: the image is larger than ${LOGO_MAX_BYTES / 1024} KB.`);
  const type = logoType(bytes);
  if (!type) throw new Validation('logo', 'logo: only PNG or JPEG images are taken (the file is checked by its content, not its name; SVG is never taken).');
  if (!drawable(bytes)) throw new Validation('logo', `logo: the ${type === 'image/png' ? 'PNG' : 'JPEG'} image could not be read; it may be damaged.`);
  const values = { logo: bytes, logo_type: type, logo_updated_at: db.fn.now(), updated_at: db.fn.now() };
  await db('workspace_profiles').insert({ workspace_id: access.workspaceId, ...values }).onConflict('workspace_id').merge(values);
  return getProfile(db, access);
}

/** DELETE /workspace/profile/logo (the owner). */
export async function removeLogo(db: Db, access: Access): Promise<Profile> {
  await scoped(db, 'workspace_profiles', access.workspaceId).update({ logo: null, logo_type: null, logo_updated_at: null, updated_at: db.fn.now() });
  return getProfile(db, access);
}

/** The logo's bytes and type, or null. */
export async function logoOf(db: Db, access: Access): Promise<{ type: LogoType; bytes: Buffer; updated_at: string } | null> {
  const row = await scoped(db, 'workspace_profiles', access.workspaceId).whereNotNull('logo').first('logo', 'logo_type', 'logo_updated_at');
  return row ? { type: row.logo_type, bytes: Buffer.from(row.logo), updated_at: iso(row.logo_updated_at)! } : null;
}

/** The seller a quote of this workspace names (its page, mail and PDF). */
export async function sellerOf(db: Db, access: Access): Promise<Seller> {
  const row = await db('workspaces as w')
    .leftJoin('workspace_profiles as p', 'p.workspace_id', 'w.id')
    .where('w.id', access.workspaceId)
    .where((q) => q.where('p.workspace_id', access.workspaceId).orWhereNull('p.workspace_id'))
    .first('w.name', 'w.time_zone', ...textColumns.map((c) => `p.${c}`), 'p.logo_updated_at');
  if (!row) throw new NotFound('Workspace not found.');
  return {
    name: row.name,
    legal_name: row.legal_name ?? null,
    address: row.address ?? null,
    tax_number: row.tax_number ?? null,
    email: row.email ?? null,
    phone: row.phone ?? null,
    website: row.website ?? null,
    terms: row.default_terms ?? null,
    time_zone: row.time_zone ?? null,
    logo_updated_at: iso(row.logo_updated_at),
  };
}
