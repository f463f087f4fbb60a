/**
 * The records of who may call: a workspace and its users. The workspaces area owns their rules and SQL
 * (workspaces/model.ts, workspaces/service.ts); the types sit on the ground floor so that the HTTP kit's
 * Principal can carry them without importing an area.
 */
export type WorkspaceStatus = 'trialing' | 'active' | 'suspended';
export type Role = 'owner' | 'member';

export interface Workspace {
  id: number;
  name: string;
  slug: string;
  status: WorkspaceStatus;
  trial_ends_at: Date | null;
  public_key: string;
  /** The IANA zone pages show dates in (`Europe/Paris`); null is UTC. */
  time_zone: string | null;
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
