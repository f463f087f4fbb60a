import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Transporter } from 'nodemailer';
import { HttpError, Unavailable } from '../errors.js';
import { log } from '../log.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/** SMTP through nodemailer, or null when SMTP_URL is unset (mail-dependent operations then answer 503). */
export function createMailer(smtpUrl: string | undefined, from: string): Mailer | null {
  if (!smtpUrl) return null;
  let transport: Promise<Transporter> | undefined;
  const connect = async () => {
    const nodemailer = await import('nodemailer');
    return nodemailer.createTransport(smtpUrl, { from });
  };
  return {
    async send(mail) {
      transport ??= connect();
      try {
        await (await transport).sendMail({ from, ...mail });
      } catch (err) {
        log.warn('mail not sent', { error: (err as Error).message });
        throw new HttpError(502, 'The mail server did not accept the message; try again later.');
      }
    },
    close() {
      void transport?.then((t) => t.close());
    },
  };
}

export function requireMailer(mailer: Mailer | null): Mailer {
  if (!mailer) throw new Unavailable('Mail is not configured on this server (SMTP_URL is unset).');
  return mailer;
}

const templatesDir = fileURLToPath(new URL('../../../templates/mail/', import.meta.url));
const cache = new Map<string, string>();

/**
 * Renders templates/mail/<name>.txt: the first line is the subject, the rest the body; `{{key}}` is replaced.
 * The template is split before it is filled, so a value with a line break (a workspace name) cannot move
 * text between subject and body; line breaks in the subject become spaces.
 */
export function renderMail(name: string, vars: Record<string, string>): { subject: string; text: string } {
  let template = cache.get(name);
  if (template === undefined) {
    template = fs.readFileSync(`${templatesDir}${name}.txt`, 'utf8');
    cache.set(name, template);
  }
  const fill = (text: string) => text.replace(/\{\{(\w+)\}\}/g, (_, key: string) => vars[key] ?? '');
  const [subject, ...body] = template.split('\n');
  return {
    subject: fill(subject.replace(/^Subject:\s*/, '')).replace(/\s+/g, ' ').trim(),
    text: fill(body.join('\n').trimStart()),
  };
}
