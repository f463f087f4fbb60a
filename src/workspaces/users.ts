import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';

export interface WorkspaceUser {
  id: number;
  name: string;
  email: string;
  role: 'owner' | 'member';
}

/** The workspace's users by name then email: what a page offers to pick from, and how it names a user id. */
export async function workspaceUsers(db: Db, access: Access): Promise<WorkspaceUser[]> {
  return (await scoped(db, 'users', access.workspaceId).orderBy(['name', 'email', 'id']).select('id', 'name', 'email', 'role')) as WorkspaceUser[];
}
