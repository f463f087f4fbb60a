import { z } from 'zod';
import { jsonList, reply, type Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { channelOut, createChannelBody, listChannelsQuery, memberBody, memberOut, updateChannelBody } from './schema.js';
import { createChannel, deleteChannel, getChannel, grantRole, listChannels, revokeRole, updateChannel } from './service.js';

const rolesNote =
  'Owners may do everything. A member reads a channel only with a role on it (viewer, editor or manager; 403 otherwise) ' +
  'and changes it, or grants and revokes roles on it, only as manager. A channel of another workspace is 404, checked before the role.';

export function channelRoutes(api: Api, { db }: AppDeps): void {
  api.tag('Channels', 'Sales channels and the roles members hold on them');
  const tag = 'Channels';
  const one = z.object({ channel: channelOut });
  const member = z.object({ member: memberOut });

  api.route(
    {
      method: 'post', path: '/channels', tag, auth: 'session:owner', status: 201, body: createChannelBody, response: one,
      summary: 'Create a channel (owner only)',
    },
    async ({ body, auth }) => reply(201, { channel: await db.transaction((trx) => createChannel(trx, auth.access, body)) }),
  );

  api.route(
    {
      method: 'get', path: '/channels', tag, auth: 'session', query: listChannelsQuery, response: z.object({ channels: z.array(channelOut) }),
      summary: 'The channels the caller may read (unpaginated), optionally filtered',
      description: 'Owners see every channel of the workspace; a member sees the channels they have a role on. type, ownership, status and country are exact-match filters (country case-insensitive), q a case-insensitive substring of the name; empty values are ignored.',
      errors: { 422: 'A filter value is not one of the allowed values (the message names the filter)' },
    },
    async ({ query, auth }) => jsonList('channels', listChannels(db, auth.access, query)),
  );

  api.route(
    {
      method: 'get', path: '/channels/{id}', tag, auth: 'session',
      response: z.object({ channel: channelOut, members: z.array(memberOut).describe('The roles granted on the channel, by user_id') }),
      summary: 'One channel with the roles granted on it; needs any role on it (owners always)',
      description: rolesNote,
      errors: { 403: 'No role on the channel' },
    },
    async ({ params, auth }) => getChannel(db, auth.access, params.id),
  );

  api.route(
    {
      method: ['patch', 'put'], path: '/channels/{id}', tag, auth: 'session', body: updateChannelBody, response: one,
      summary: 'Change a channel (partial: omitted fields keep their value); needs the manager role (owners always)',
      description: rolesNote,
      errors: { 403: 'Not a manager of the channel' },
    },
    async ({ params, body, auth }) => ({ channel: await db.transaction((trx) => updateChannel(trx, auth.access, params.id, body)) }),
  );

  api.route(
    {
      method: 'delete', path: '/channels/{id}', tag, auth: 'session:owner', response: one,
      summary: 'Delete a channel (owner only); 409 while quotes or orders use it',
      description: 'A channel that quotes or orders reference is not deleted: 409 with data.dependents {quotes, orders}; archive it instead. Otherwise the channel and the roles on it are removed and the snapshot is returned.',
      errors: { 409: 'Quotes or orders use the channel (data.dependents has their counts)' },
    },
    async ({ params, auth }) => ({ channel: await db.transaction((trx) => deleteChannel(trx, auth.access, params.id)) }),
  );

  api.route(
    {
      method: 'put', path: '/channels/{id}/members/{user_id}', tag, auth: 'session', body: memberBody, response: member,
      summary: 'Grant a user of the workspace a role on the channel, or change it (idempotent); needs the manager role (owners always)',
      description: `${rolesNote} The user must belong to the workspace (404 otherwise). Granting the role a user already has changes nothing. A role granted to an owner is stored but adds nothing: owners see every channel.`,
      errors: { 403: 'Not a manager of the channel' },
    },
    async ({ params, body, auth }) => ({ member: await db.transaction((trx) => grantRole(trx, auth.access, params.id, params.user_id, body.role)) }),
  );

  api.route(
    {
      method: 'delete', path: '/channels/{id}/members/{user_id}', tag, auth: 'session', response: member,
      summary: "Revoke a user's role on the channel (effective at once); needs the manager role (owners always)",
      description: `${rolesNote} 404 when the user has no role on the channel. Answers the removed role.`,
      errors: { 403: 'Not a manager of the channel' },
    },
    async ({ params, auth }) => ({ member: await db.transaction((trx) => revokeRole(trx, auth.access, params.id, params.user_id)) }),
  );
}
