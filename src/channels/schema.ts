import { z } from 'zod';
import { countryInput, enumFilter, filterInput, requiredText } from '../schema/input.js';
import { currency, id, timestamp } from '../schema/output.js';

export const channelTypes = ['web', 'marketplace', 'retail', 'wholesale', 'b2b'] as const;
export const channelOwnerships = ['owned', 'third_party'] as const;
export const channelStatuses = ['active', 'paused', 'archived'] as const;
export const channelRoles = ['viewer', 'editor', 'manager'] as const;

const oneOf = <T extends readonly [string, ...string[]]>(values: T) => z.enum(values, { error: `must be one of ${values.join(', ')}` });

/** ISO 4217, upper-cased; null or an empty string clears it. */
const optionalCurrency = z
  .union([z.string(), z.null()])
  .transform((v) => (v === null || v.trim() === '' ? null : v.trim().toUpperCase()))
  .pipe(z.string().regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO currency code').nullable())
  .optional();

const fields = {
  type: oneOf(channelTypes).optional(),
  ownership: oneOf(channelOwnerships).optional(),
  status: oneOf(channelStatuses).optional(),
  country: countryInput.describe('ISO 3166-1 alpha-2, upper-cased; null or "" clears it'),
  currency: optionalCurrency.describe('ISO 4217, upper-cased; null or "" clears it'),
};

export const createChannelBody = z.object({
  name: requiredText(200),
  ...fields,
  type: fields.type.describe('Default web'),
  ownership: fields.ownership.describe('Default owned'),
  status: fields.status.describe('Default active'),
});
export const updateChannelBody = z.object({ name: requiredText(200).optional(), ...fields });
export type ChannelChanges = z.output<typeof updateChannelBody>;

export const listChannelsQuery = z.object({
  type: enumFilter(channelTypes, 'Exact match'),
  ownership: enumFilter(channelOwnerships, 'Exact match'),
  status: enumFilter(channelStatuses, 'Exact match'),
  country: filterInput
    .transform((v) => v?.toUpperCase())
    .pipe(z.string().regex(/^[A-Z]{2}$/, 'must be a 2-letter ISO country code').optional())
    .meta({ type: 'string', description: 'Exact match on the ISO 3166-1 alpha-2 code, case-insensitive' }),
  q: filterInput.describe('Case-insensitive substring of the name'),
});
export type ChannelFilters = z.output<typeof listChannelsQuery>;

export const memberBody = z.object({ role: oneOf(channelRoles) });

export const channelOut = z.object({
  id,
  name: z.string(),
  type: z.enum(channelTypes),
  ownership: z.enum(channelOwnerships),
  status: z.enum(channelStatuses),
  country: z.string().nullable(),
  currency: currency.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'Channel' });

export const memberOut = z.object({
  channel_id: id,
  user_id: id,
  role: z.enum(channelRoles),
  created_at: timestamp,
  updated_at: timestamp,
}).meta({ id: 'ChannelMember' });
