import type { Knex } from 'knex';

/**
 * Visitor tracking: the events browsers send, the per-workspace rate windows that every server
 * process counts in, and one-use join codes. (Visitors linked to customers live in `visitors`,
 * created with the customers so that the cascade rule counts them.)
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table track_events (
      id bigint generated always as identity primary key,
      workspace_id integer not null references workspaces (id) on delete cascade,
      visitor_id text not null,
      type text not null check (type in ('page_view', 'product_view', 'add_to_cart', 'search', 'custom')),
      url text,
      title text,
      referrer text,
      sku text,
      category text,
      properties jsonb,
      -- The product the sku named (directly or through a variant) when the event arrived. No foreign
      -- key: deleting a product would have to scan every event, and reads join to products anyway,
      -- so an event of a deleted product simply names no product.
      product_id integer,
      occurred_at timestamptz not null,
      received_at timestamptz not null default now()
    )
  `);
  // The included columns let recommendations and interest read these indexes alone (index-only scans),
  // instead of one heap page per event: a visitor's events are spread over the whole table.
  // A visitor's (and so a customer's) events, newest first.
  await knex.raw('create index track_events_visitor on track_events (workspace_id, visitor_id, occurred_at desc, id desc) include (product_id, category)');
  // Who viewed a product, most recent first: co-views for recommendations.
  await knex.raw('create index track_events_product on track_events (workspace_id, product_id, occurred_at desc) include (visitor_id) where product_id is not null');
  // The workspace's recent events (popularity, interest) and the retention purge.
  await knex.raw('create index track_events_time on track_events (workspace_id, occurred_at) include (product_id, category)');

  // One row per workspace and minute; every server process counts in the same row.
  await knex.raw(`
    create table track_rate_windows (
      workspace_id integer not null references workspaces (id) on delete cascade,
      window_start timestamptz not null,
      count integer not null,
      primary key (workspace_id, window_start)
    )
  `);

  await knex.raw(`
    create table track_join_codes (
      id integer generated always as identity primary key,
      workspace_id integer not null references workspaces (id) on delete cascade,
      code_hash text not null unique,
      customer_id integer not null references customers (id) on delete cascade,
      expires_at timestamptz not null,
      used_at timestamptz,
      created_at timestamptz not null default now()
    )
  `);
  await knex.raw('create index track_join_codes_customer on track_join_codes (workspace_id, customer_id)');
  await knex.raw('create index track_join_codes_expiry on track_join_codes (workspace_id, expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['track_join_codes', 'track_rate_windows', 'track_events']) await knex.schema.dropTableIfExists(table);
}
