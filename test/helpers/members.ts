import type { Client } from './client.js';
import { uniqueEmail, type Owner, type TestApp } from './app.js';
import type { ReceivedMail } from './smtp.js';

interface Smtp {
  mails: ReceivedMail[];
  waitFor(to: string): Promise<ReceivedMail>;
}

/** The one-time code of an invite or password reset mail ("Your invitation code: …", "Your reset code: …"). */
export function tokenFromMail(mail: ReceivedMail): string {
  const match = /code: ([A-Za-z0-9_-]{20,})/.exec(mail.text);
  if (!match) throw new Error(`no token in mail:\n${mail.text}`);
  return match[1];
}

export interface Member {
  client: Client;
  email: string;
  password: string;
  user: any;
}

/** The owner invites a new user by mail and the invitee accepts; the returned client holds their session. */
export async function inviteMember(app: TestApp, smtp: Smtp, owner: Owner, role: 'owner' | 'member' = 'member'): Promise<Member> {
  const email = uniqueEmail('member');
  const invited = await owner.client.post('/api/v1/invites', { email, role });
  if (invited.status !== 201) throw new Error(`invite failed: ${invited.status} ${invited.text}`);
  const token = tokenFromMail(await smtp.waitFor(email));
  const client = app.client();
  const password = 'member password 123';
  const accepted = await client.post('/api/v1/invites/accept', { token, name: 'Mia Member', password });
  if (accepted.status !== 201) throw new Error(`accept failed: ${accepted.status} ${accepted.text}`);
  return { client, email, password, user: accepted.body.data.user };
}
