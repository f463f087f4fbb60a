import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as scryptTypes from 'scrypt-kdf';

// scrypt-kdf's typings declare named exports, but the module exports one default object.
const Scrypt = (scryptTypes as unknown as { default: typeof scryptTypes }).default;

/** scrypt cost: N = 2^15, r = 8, p = 1 (32 MiB a hash): slow enough to make guessing costly, quick enough for a sign-in. */
const SCRYPT_PARAMS = { logN: 15, r: 8, p: 1 } as const;

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** SHA-256 is right for high-entropy secrets (keys, session tokens); passwords use scrypt. */
export function sha256(value: string): string {
  // The one-shot form: no Hash object per call (this runs on every session-authenticated request).
  return hash('sha256', value, 'hex');
}

/** Constant-time comparison of two strings of any length. */
export function safeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

export async function hashPassword(password: string): Promise<string> {
  return Buffer.from(await Scrypt.kdf(password, SCRYPT_PARAMS)).toString('base64');
}

let dummyHash: Promise<string> | undefined;

/** Verifies a password; with no stored hash it still spends the same time, so unknown emails are not revealed. */
export async function verifyPassword(stored: string | undefined, password: string): Promise<boolean> {
  if (!stored) {
    dummyHash ??= hashPassword(randomToken());
    await Scrypt.verify(Buffer.from(await dummyHash, 'base64'), password);
    return false;
  }
  return Scrypt.verify(Buffer.from(stored, 'base64'), password);
}
