/** /app/settings/account (everyone): your name, the way to your password, and signing out your other sessions. */
import { html } from '../templates.js';
import type { AppDeps } from '../http/deps.js';
import { parseInput } from '../schema/parse.js';
import { renameBody } from '../auth/schema.js';
import { renameUser } from '../auth/service.js';
import { endOtherSessions, otherSessionCount } from '../auth/sessions.js';
import { page, redirect, type PageDef, type PageInput } from './page.js';
import { shell } from './layout.js';
import { settingsTabs } from './settings.js';
import { field, fieldErrors, formText, type FieldErrors } from './forms.js';

const PATH = '/app/settings/account';

export function yourAccountPages({ db }: AppDeps): PageDef[] {
  const accountPage = async (input: PageInput<unknown>, name: string, errors: FieldErrors) => {
    const { auth } = input;
    const others = await otherSessionCount(db, auth.user.id, auth.sessionId!);
    return shell(auth, {
      title: 'Your account',
      section: 'settings',
      flash: input.flash,
      content: html`<h1>Your account</h1>
${auth.maybeWorkspace ? settingsTabs(auth, PATH) : ''}
<div class="grid">
<section class="card" aria-labelledby="name-heading">
  <h2 id="name-heading">Name</h2>
  <form method="post" action="${PATH}" class="stack" novalidate>
    ${field({ name: 'name', label: 'Your name', value: name, errors, required: true, autocomplete: 'name', hint: 'Your colleagues see it; activities name you by it.' })}
    <div class="actions"><button type="submit" class="primary">Save</button></div>
  </form>
</section>
<section class="card" aria-labelledby="sign-in-heading">
  <h2 id="sign-in-heading">Signing in</h2>
  <dl class="meta">
    <div><dt>Email</dt><dd>${auth.user.email}</dd></div>
    <div><dt>Role</dt><dd>${auth.role === 'owner' ? 'Owner' : auth.role === 'member' ? 'Member' : 'No workspace yet'}</dd></div>
  </dl>
  <p class="actions"><a class="button" href="/app/settings/password">Change your password</a></p>
  <p>${others === 0 ? 'You are signed in here only.' : `You are also signed in ${others === 1 ? 'in one other place' : `in ${others} other places`} (another browser or device).`}</p>
  ${others > 0
    ? html`<form method="post" action="${PATH}/sessions" data-confirm="Sign out everywhere else?"><button type="submit" class="danger">Sign out every other session</button></form>`
    : ''}
</section>
</div>`,
    });
  };

  return [
    page({
      method: 'get', path: PATH, who: 'user',
      handle: async (input) => accountPage(input, input.auth.user.name, {}),
    }),
    page({
      method: 'post', path: PATH, who: 'user',
      handle: async ({ form, auth }) => {
        const body = parseInput(renameBody, { name: formText(form, 'name') });
        await renameUser(db, auth.user.id, body.name);
        return redirect(PATH, 'Your name is saved.');
      },
      invalid: async (input, error) => accountPage(input, formText(input.form, 'name'), fieldErrors(error)),
    }),
    page({
      method: 'post', path: `${PATH}/sessions`, who: 'user',
      handle: async ({ auth }) => {
        const ended = await endOtherSessions(db, auth.user.id, auth.sessionId!);
        return redirect(PATH, ended === 1 ? 'One other session is signed out.' : `${ended} other sessions are signed out.`);
      },
    }),
  ];
}
