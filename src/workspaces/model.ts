import type { Workspace } from '../accounts.js';

export const workspaceColumns = ['id', 'name', 'slug', 'status', 'trial_ends_at', 'public_key', 'time_zone', 'created_at', 'updated_at'] as const;
export const userColumns = ['id', 'email', 'name', 'workspace_id', 'role', 'created_at', 'updated_at'] as const;

/** Why a workspace is locked, or null when it is usable. */
export function lockReason(workspace: Workspace, now = new Date()): string | null {
  if (workspace.status === 'suspended') return 'This workspace is suspended.';
  if (workspace.status === 'trialing' && workspace.trial_ends_at && workspace.trial_ends_at.getTime() <= now.getTime()) {
    return 'The trial of this workspace has expired.';
  }
  return null;
}
