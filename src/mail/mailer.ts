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

/**
 * How long a mail may wait on the SMTP server, in ms: a quote's send holds its transaction (and the quote's row) until
 * the mail is accepted, so a server that stops answering must end in a 502, not hold them for nodemailer's defaults
 * (2 minutes to connect, 10 of silence).
 */
export const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, dnsTimeout: 10_000, socketTimeout: 20_000 };

/** SMTP through nodemailer, or null when SMTP_URL is unset (mail-dependent operations then answer 503). */
export function createMailer(smtpUrl: string | undefined, from: string): Mailer | null {
  if (!smtpUrl) return null;
  let transport: Promise<Transporter> | undefined;
  const connect = async () => {
    const nodemailer = await import('nodemailer');
    // Settings the URL gives (its query string) win over these.
    return nodemailer.createTransport({ ...SMTP_TIMEOUTS, url: smtpUrl }, { from });
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
