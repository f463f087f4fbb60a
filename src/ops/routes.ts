import { z } from 'zod';
import type { Api } from '../http/api.js';
import type { AppDeps } from '../http/deps.js';
import { migrateLatest } from '../db/migrations.js';

export function opsRoutes(api: Api, { db }: AppDeps): void {
  api.tag('Ops', "Health check, this document, and the operator's endpoints (workspace administration, migration)");
  api.route(
    {
      method: 'post', path: '/migrate', tag: 'Ops', auth: 'migrate',
      summary: 'Apply pending database migrations (X-Migrate-Token header or ?token=)',
      response: z.object({ migrations: z.object({ applied: z.array(z.string()) }) }),
    },
    async () => ({ migrations: { applied: await migrateLatest(db) } }),
  );
}
