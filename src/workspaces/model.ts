export type WorkspaceStatus = 'trialing' | 'active' | 'suspended';
export type Role = 'owner' | 'member';

export interface Workspace {
  id: number;
  name: string;
  slug: string;
  status: WorkspaceStatus;
  trial_ends_at: Date | null;
  public_key: string;
  created_at: Date;
  updated_at: Date;
}

export interface User {
  id: number;
  email: string;
  name: string;
  workspace_id: number | null;
  role: Role | null;
  created_at: Date;
  updated_at: Date;
}

export const workspaceColumns = ['id', 'name', 'slug', 'status', 'trial_ends_at', 'public_key', 'created_at', 'updated_at'] as const;
export const userColumns = ['id', 'email', 'name', 'workspace_id', 'role', 'created_at', 'updated_at'] as const;

/** Why a workspace is locked, or null when it is usable. */
export function lockReason(workspace: Workspace, now = new Date()): string | null {
  if (workspace.status === 'suspended') return 'This workspace is suspended.';
  if (workspace.status === 'trialing' && workspace.trial_ends_at && workspace.trial_ends_at.getTime() <= now.getTime()) {
    return 'The trial of this workspace has expired.';
  }
  return null;
}
