/** The page where a password reset link (mailed, or printed by `quoting user add`) sets a new password. */
export const passwordResetLink = (appUrl: string, token: string): string => `${appUrl}/reset/${encodeURIComponent(token)}`;
/** The page where an invite is accepted. */
export const inviteLink = (appUrl: string, token: string): string => `${appUrl}/invite/${encodeURIComponent(token)}`;
