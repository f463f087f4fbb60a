import type { Transporter } from 'nodemailer';
import { HttpError, Unavailable } from '../errors.js';
import { log } from '../log.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** Files sent with the mail (the quote's PDF). */
  attachments?: { filename: string; content: Buffer; contentType: string }[];
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
