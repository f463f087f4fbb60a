/** The app's pages that spend a token: mailed by the API, printed by the CLI (`quoting user add`). */
export const passwordResetLink = (appUrl: string, token: string): string => `${appUrl}/password-reset?token=${encodeURIComponent(token)}`;

export const inviteLink = (appUrl: string, token: string): string => `${appUrl}/invites/accept?token=${encodeURIComponent(token)}`;
