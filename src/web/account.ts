/** The account pages: sign in and out, a forgotten password, a reset link, an invite, sign-up, and the password change. */
import { z } from 'zod';
import { Forbidden, HttpError, NotFound, Unauthorized } from '../errors.js';
import type { AppDeps } from '../http/deps.js';
import { parseInput } from '../schema/parse.js';
import { html } from '../templates.js';
import { acceptInviteBody, changePasswordBody, loginBody, resetConfirmBody, resetRequestBody, signupBody } from '../auth/schema.js';
import { acceptInvite, changePassword, checkCredentials, confirmPasswordReset, signUp } from '../auth/service.js';
import { mailPasswordReset } from '../auth/mails.js';
import { clearSessionCookie, createSession, deleteSession, setSessionCookie } from '../auth/sessions.js';
import { page, redirect, Rendered, type PageDef, type PageInput } from './page.js';
import { bare, shell } from './layout.js';
import { field, fieldErrors, formText, type FieldErrors } from './forms.js';

/** Where sign-in goes next: a path on this site (`/app/quotes?page=2`), never another site (`//evil`, `/\evil`). */
export function safeNext(next: unknown): string {
  return typeof next === 'string' && /^\/(?![/\\])[^\s]*$/.test(next) && next.length <= 2000 ? next : '/app';
}

const nextQuery = z.object({ next: z.string().optional() });

export function accountPages({ db, config, mailer }: AppDeps): PageDef[] {
  const mail = { mailer, appUrl: config.APP_URL };
  const signupOpen = config.SIGNUP === 'open';

  const loginForm = (input: PageInput<{ next?: string }>, email: string, problem?: string) =>
    bare(
      'Sign in',
      html`<section class="card">
  <h1>Sign in</h1>
  ${problem ? html`<div class="flash flash-error" role="alert">${problem}</div>` : ''}
  <form method="post" action="/login" class="stack">
    <input type="hidden" name="next" value="${safeNext(input.query.next ?? formText(input.form, 'next'))}">
    ${field({ name: 'email', label: 'Email', type: 'email', value: email, required: true, autocomplete: 'username' })}
    ${field({ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' })}
    <button type="submit" class="primary">Sign in</button>
  </form>
  <p><a href="/forgot">Forgot your password?</a>${signupOpen ? html` · <a href="/signup">Create an account</a>` : ''}</p>
</section>`,
      input.flash,
    );

  const signupForm = (form: Record<string, unknown>, errors: FieldErrors) =>
    bare(
      'Create an account',
      html`<section class="card">
  <h1>Create an account</h1>
  <p>You get a workspace of your own, with you as its owner.</p>
  <form method="post" action="/signup" class="stack" novalidate>
    ${field({ name: 'name', label: 'Your name', value: formText(form, 'name'), errors, required: true, autocomplete: 'name' })}
    ${field({ name: 'email', label: 'Email', type: 'email', value: formText(form, 'email'), errors, required: true, autocomplete: 'email' })}
    ${field({ name: 'password', label: 'Password', type: 'password', errors, required: true, autocomplete: 'new-password', hint: 'At least 10 characters.' })}
    ${field({ name: 'workspace_name', label: 'Workspace name', value: formText(form, 'workspace_name'), errors, required: true, hint: 'Your company or team; customers see it on quotes.' })}
    <button type="submit" class="primary">Create account</button>
  </form>
  <p>Already have an account? <a href="/login">Sign in</a></p>
</section>`,
    );

  const resetForm = (token: string, errors: FieldErrors) =>
    bare(
      'Choose a new password',
      html`<section class="card">
  <h1>Choose a new password</h1>
  <form method="post" action="/reset/${encodeURIComponent(token)}" class="stack" novalidate>
    ${field({ name: 'password', label: 'New password', type: 'password', errors, required: true, autocomplete: 'new-password', hint: 'At least 10 characters.' })}
    <button type="submit" class="primary">Set password</button>
  </form>
</section>`,
    );

  const inviteForm = (token: string, form: Record<string, unknown>, errors: FieldErrors) =>
    bare(
      'Accept your invite',
      html`<section class="card">
  <h1>Join the workspace</h1>
  <p>Choose your name and a password to accept the invite.</p>
  <form method="post" action="/invite/${encodeURIComponent(token)}" class="stack" novalidate>
    ${field({ name: 'name', label: 'Your name', value: formText(form, 'name'), errors, required: true, autocomplete: 'name' })}
    ${field({ name: 'password', label: 'Password', type: 'password', errors, required: true, autocomplete: 'new-password', hint: 'At least 10 characters.' })}
    <button type="submit" class="primary">Accept invite</button>
  </form>
</section>`,
    );

  const passwordForm = (input: PageInput<unknown>, errors: FieldErrors) =>
    shell(input.auth, {
      title: 'Your password',
      section: 'settings',
      flash: input.flash,
      content: html`<h1>Your password</h1>
<section class="card narrow">
  <form method="post" action="/app/settings/password" class="stack" novalidate>
    ${field({ name: 'current_password', label: 'Current password', type: 'password', errors, required: true, autocomplete: 'current-password' })}
    ${field({ name: 'password', label: 'New password', type: 'password', errors, required: true, autocomplete: 'new-password', hint: 'At least 10 characters. Your other sessions are signed out.' })}
    <button type="submit" class="primary">Change password</button>
  </form>
</section>`,
    });

  /** A token page's 404 and 410 as the page itself, in the account pages' look. */
  const spentLink = (err: unknown, what: string) => {
    if (err instanceof HttpError && (err.status === 404 || err.status === 410)) {
      return new Rendered(
        err.status,
        bare(what, html`<section class="card"><h1>${what}</h1><p>${err.status === 404 ? 'This link is not valid. Check that you copied all of it.' : err.message}</p><p><a href="/login">Go to sign in</a></p></section>`),
      );
    }
    throw err;
  };

  return [
    page({
      method: 'get', path: '/', who: 'anyone',
      handle: async ({ auth }) => redirect(safeUser(auth) ? '/app' : '/login'),
    }),
    page({
      method: 'get', path: '/login', who: 'anyone', query: nextQuery,
      handle: async (input) => (safeUser(input.auth) ? redirect(safeNext(input.query.next)) : loginForm(input, '')),
    }),
    page({
      method: 'post', path: '/login', who: 'anyone', query: nextQuery,
      handle: async (input) => {
        try {
          const body = parseInput(loginBody, input.form);
          const { user } = await checkCredentials(db, body.email, body.password);
          setSessionCookie(input.ctx, await createSession(db, user.id));
          return redirect(safeNext(formText(input.form, 'next')));
        } catch (err) {
          if (err instanceof Unauthorized || (err instanceof HttpError && err.status === 422)) {
            return new Rendered(err.status === 401 ? 401 : 422, loginForm(input, formText(input.form, 'email'), err.status === 401 ? 'That email and password do not match an account.' : err.message));
          }
          throw err;
        }
      },
    }),
    page({
      method: 'get', path: '/logout', who: 'anyone',
      handle: async ({ auth }) =>
        safeUser(auth)
          ? bare('Sign out', html`<section class="card"><h1>Sign out?</h1><form method="post" action="/logout"><button type="submit" class="primary">Sign out</button></form></section>`)
          : redirect('/login'),
    }),
    page({
      method: 'post', path: '/logout', who: 'anyone',
      handle: async ({ ctx, auth }) => {
        if (auth.sessionId !== null) await deleteSession(db, auth.sessionId);
        clearSessionCookie(ctx);
        return redirect('/login', 'You are signed out.');
      },
    }),
    page({
      method: 'get', path: '/forgot', who: 'anyone',
      handle: async ({ flash }) =>
        bare(
          'Forgot your password',
          mailer
            ? html`<section class="card">
  <h1>Forgot your password?</h1>
  <p>Enter your email and we will send you a link to choose a new one.</p>
  <form method="post" action="/forgot" class="stack">
    ${field({ name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'username' })}
    <button type="submit" class="primary">Send the link</button>
  </form>
  <p><a href="/login">Back to sign in</a></p>
</section>`
            : html`<section class="card">
  <h1>Forgot your password?</h1>
  <p>This server does not send mail, so the link cannot be mailed to you. Ask an owner of your workspace to set a new password for you, or your administrator to run <code>quoting user add</code> for a set-password link.</p>
  <p><a href="/login">Back to sign in</a></p>
</section>`,
          flash,
        ),
    }),
    page({
      method: 'post', path: '/forgot', who: 'anyone',
      handle: async ({ form }) => {
        const body = parseInput(resetRequestBody, form);
        await mailPasswordReset(db, body.email, mail);
        // The same answer whether or not the account exists.
        return redirect('/login', `If ${body.email} has an account, a link to choose a new password is on its way.`);
      },
      invalid: async (_input, error) => bare('Forgot your password', html`<section class="card"><h1>Forgot your password?</h1><div class="flash flash-error" role="alert">${error.message}</div><p><a href="/forgot">Try again</a></p></section>`),
    }),
    page({
      method: 'get', path: '/reset/{token}', who: 'anyone',
      handle: async ({ text }) => resetForm(text.token, {}),
    }),
    page({
      method: 'post', path: '/reset/{token}', who: 'anyone',
      handle: async ({ text, form }) => {
        const body = parseInput(resetConfirmBody, { token: text.token, password: formText(form, 'password') });
        try {
          await db.transaction((trx) => confirmPasswordReset(trx, body.token, body.password));
        } catch (err) {
          return spentLink(err, 'Reset link');
        }
        return redirect('/login', 'Your password is set. Sign in with it now.');
      },
      invalid: async ({ text }, error) => resetForm(text.token, fieldErrors(error)),
    }),
    page({
      method: 'get', path: '/invite/{token}', who: 'anyone',
      handle: async ({ text }) => inviteForm(text.token, {}, {}),
    }),
    page({
      method: 'post', path: '/invite/{token}', who: 'anyone',
      handle: async ({ ctx, text, form }) => {
        const body = parseInput(acceptInviteBody, { token: text.token, name: formText(form, 'name'), password: formText(form, 'password') });
        let user;
        try {
          user = await db.transaction((trx) => acceptInvite(trx, body));
        } catch (err) {
          return spentLink(err, 'Invite');
        }
        setSessionCookie(ctx, await createSession(db, user.id));
        return redirect('/app', 'Welcome! You have joined the workspace.');
      },
      invalid: async ({ text, form }, error) => inviteForm(text.token, form, fieldErrors(error)),
    }),
    page({
      method: 'get', path: '/signup', who: 'anyone',
      handle: async () => {
        if (!signupOpen) throw new NotFound('Sign-up is closed on this server: ask a workspace owner for an invite.');
        return signupForm({}, {});
      },
    }),
    page({
      method: 'post', path: '/signup', who: 'anyone',
      handle: async ({ ctx, form }) => {
        if (!signupOpen) throw new Forbidden('Sign-up is closed: ask a workspace owner for an invite.');
        const body = parseInput(signupBody.required({ workspace_name: true }), {
          name: formText(form, 'name'), email: formText(form, 'email'), password: formText(form, 'password'), workspace_name: formText(form, 'workspace_name'),
        });
        const { user } = await db.transaction((trx) =>
          signUp(trx, { email: body.email, password: body.password, name: body.name, workspace: { name: body.workspace_name, trialDays: config.TRIAL_DAYS } }),
        );
        setSessionCookie(ctx, await createSession(db, user.id));
        return redirect('/app', 'Welcome! Your workspace is ready.');
      },
      invalid: async ({ form }, error) => signupForm(form, fieldErrors(error)),
      conflict: async ({ form }, error) => signupForm(form, { email: error.message }),
    }),
    page({
      method: 'get', path: '/app/settings/password', who: 'user',
      handle: async (input) => passwordForm(input, {}),
    }),
    page({
      method: 'post', path: '/app/settings/password', who: 'user',
      handle: async ({ form, auth }) => {
        const body = parseInput(changePasswordBody, { current_password: formText(form, 'current_password'), password: formText(form, 'password') });
        await db.transaction((trx) => changePassword(trx, { userId: auth.user.id, sessionId: auth.sessionId!, currentPassword: body.current_password, password: body.password }));
        return redirect('/app/settings/password', 'Your password is changed. Your other sessions are signed out.');
      },
      invalid: async (input, error) => passwordForm(input, fieldErrors(error)),
    }),
  ];
}

/** Whether the caller is signed in (the account pages are open to anyone). */
function safeUser(auth: PageInput<unknown>['auth']): boolean {
  return auth.sessionId !== null;
}
