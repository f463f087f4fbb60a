/** The attributes of one Set-Cookie header, names lower-cased (`httponly: ''`, `samesite: 'Lax'`). */
export function cookieAttributes(setCookie: string): { name: string; attributes: Record<string, string> } {
  const [pair, ...parts] = setCookie.split(';');
  const attributes: Record<string, string> = {};
  for (const part of parts) {
    const [key, ...value] = part.split('=');
    attributes[key.trim().toLowerCase()] = value.join('=').trim();
  }
  return { name: pair.split('=')[0].trim(), attributes };
}

/**
 * What is wrong with a Set-Cookie the app sent, by the spec's session cookie rules: HttpOnly,
 * SameSite=Lax, Path=/, and Secure exactly when the request came over HTTPS.
 */
export function cookieProblems(setCookie: string, https: boolean): string[] {
  const { name, attributes } = cookieAttributes(setCookie);
  const problems: string[] = [];
  if (!('httponly' in attributes)) problems.push('no HttpOnly');
  if (attributes.samesite?.toLowerCase() !== 'lax') problems.push('not SameSite=Lax');
  if (attributes.path !== '/') problems.push('not Path=/');
  if (https !== 'secure' in attributes) problems.push(https ? 'not Secure over HTTPS' : 'Secure over plain HTTP');
  return problems.map((problem) => `cookie ${name}: ${problem}`);
}
