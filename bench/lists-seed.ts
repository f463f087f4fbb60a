/**
 * Seeding for bench/lists.ts: realistic customers, and products with VARIANTS_PER_PRODUCT variants each, inserted
 * with one INSERT … SELECT generate_series per table (deterministic, no random()). Rows from..to (1-based) are
 * added to the workspace, so sizes can be grown step by step; each call ends with ANALYZE (as autovacuum would) unless told not to.
 */
import type { Knex } from 'knex';

/**
 * The tables the list seeds write: the lists', the variants', and the texts tables their triggers keep (migration
 * 20261126200000). A benchmark measuring plans without statistics turns autovacuum off on each.
 */
export const SEEDED_TABLES = ['customers', 'products', 'variants', 'quotes', 'orders', 'customer_texts', 'product_texts', 'quote_texts', 'order_texts'];

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** `(ARRAY['a','b',…])[1 + (expr) % n]` (expr may be bigint): a deterministic pick from a list of SQL text literals. */
function pick(list: string[], expr: string): string {
  return `(ARRAY[${list.map(literal).join(', ')}])[(1 + ((${expr}) % ${list.length}))::int]`;
}

const LOREM =
  'Prefers delivery before noon. Invoices go to the accounts payable address, not the buyer. Asked for volume pricing on ' +
  'the next order and a quote valid for sixty days. Contact the procurement lead for anything above the framework agreement; ' +
  'the site manager can sign off smaller changes. Ships to two warehouses, pallets only, no deliveries on public holidays. ' +
  'Payment terms net thirty, early payment discount agreed last year, reviewed every spring with the finance team.';

// Mostly ASCII with some Latin-1 and a few characters beyond it (Polish, Czech), as in a European customer base.
const FIRST = ['Anna', 'Ben', 'Chloé', 'David', 'Elena', 'François', 'Greta', 'Hugo', 'Ines', 'Jan', 'Katarzyna', 'Lukas', 'Maria', 'Noah', 'Olga', 'Pierre', 'Sofia', 'Tomáš', 'Ulrike', 'William'];
const LAST = ['Smith', 'Müller', 'Dubois', 'García', 'Rossi', 'Nowak', 'Dvořák', 'Jansen', 'Andersson', 'Brown', 'Schmidt', 'Łukasiewicz', 'Martin', 'Fernández', 'Bianchi', 'Kowalski', 'Novák', 'de Vries', 'Johansson', 'Taylor'];
const COMPANY = ['Northwind Traders', 'Acme Industrial Supply', 'Blue Harbor Logistics', 'Kessler Maschinenbau', 'Atelier Lumière', 'Vistula Components', 'Meridian Health Partners', 'Oakridge Construction', 'Brightline Retail Group', 'Nordic Timber Works', 'Solaris Energy Systems', 'Pinecrest Hospitality'];
const SUFFIX = ['GmbH', 'Ltd', 'Inc.', 's.r.o.', 'S.A.', 'LLC', 'B.V.', 'AB'];
const COUNTRY = ['US', 'DE', 'FR', 'GB', 'PL', 'CZ', 'ES', 'IT', 'NL', 'SE'];
const DIAL = ['+1 415', '+49 30', '+33 1', '+44 20', '+48 22', '+420 2', '+34 91', '+39 06', '+31 20', '+46 8'];

export async function seedCustomers(knex: Knex, workspaceId: number, from: number, to: number, analyze = true): Promise<void> {
  await knex.raw(
    `insert into customers (workspace_id, email, name, company, phone, country, notes, created_at, updated_at)
     select ?,
       lower(${pick(FIRST, 'i')}) || '.' || i || '@' || ${pick(['northwind.com', 'acme-supply.com', 'example.org', 'mail.de', 'post.cz', 'orange.fr', 'gmail.com'], 'i / 7')},
       ${pick(FIRST, 'i')} || ' ' || ${pick(LAST, 'i / 20')},
       case when i % 10 < 7 then ${pick(COMPANY, 'i / 3')} || ' ' || ${pick(SUFFIX, 'i / 11')} end,
       case when i % 5 <> 0 then ${pick(DIAL, 'i / 13')} || ' ' || lpad(((i * 7919) % 10000000)::text, 7, '0') end,
       ${pick(COUNTRY, 'i / 13')},
       case when i % 10 < 3 then left(${literal(LOREM)}, (40 + (i * 31) % 300)::int) end,
       t, t + ((i * 104729) % 2592000) * interval '1 second'
     from generate_series(?::bigint, ?::bigint) i,
          lateral (select now() - interval '2 years' + ((i * 7919) % 63072000) * interval '1 second' as t) ts`,
    [workspaceId, from, to],
  );
  if (analyze) await knex.raw('analyze customers');
}

const BRAND = ['Bosch', 'Makita', 'Würth', 'Hilti', 'Festool', 'Stanley', 'Fischer', '3M', 'Knipex', 'Wera'];
const ADJECTIVE = ['Heavy-duty', 'Cordless', 'Compact', 'Professional', 'Stainless', 'Insulated', 'Precision', 'Industrial'];
const NOUN = ['Drill', 'Impact Driver', 'Angle Grinder', 'Anchor Set', 'Screwdriver Set', 'Safety Helmet', 'Work Gloves', 'Cable Ties', 'Spirit Level', 'Socket Wrench'];
const CATEGORY = ['Power Tools', 'Hand Tools', 'Fasteners', 'Safety Equipment', 'Electrical', 'Measuring', 'Services / Installation', 'Software Licences'];
export const VARIANTS_PER_PRODUCT = 3;
const SIZE = ['S', 'M', 'L'];
const COLOR = ['black', 'red', 'blue', 'yellow', 'green', 'grey'];

export async function seedProducts(knex: Knex, workspaceId: number, from: number, to: number, analyze = true): Promise<void> {
  await knex.raw(
    `with p as (
       insert into products (workspace_id, sku, name, type, status, brand, category, description, created_at, updated_at)
       select ?, 'SKU-' || lpad(i::text, 7, '0'),
         ${pick(BRAND, 'i')} || ' ' || ${pick(ADJECTIVE, 'i / 10')} || ' ' || ${pick(NOUN, 'i / 7')} || ' ' || (10 + (i * 37) % 990),
         case when i % 10 < 7 then 'physical' when i % 10 < 9 then 'service' else 'digital' end,
         case when i % 20 = 0 then 'draft' when i % 50 = 1 then 'archived' else 'active' end,
         ${pick(BRAND, 'i')},
         ${pick(CATEGORY, 'i / 3')},
         case when i % 5 <> 0 then left(${literal(LOREM)}, (80 + (i * 37) % 320)::int) end,
         t, t + ((i * 104729) % 2592000) * interval '1 second'
       from generate_series(?::bigint, ?::bigint) i,
            lateral (select now() - interval '2 years' + ((i * 7919) % 63072000) * interval '1 second' as t) ts
       returning id, sku, created_at, updated_at
     )
     insert into variants (workspace_id, product_id, sku, name, price, attributes, created_at, updated_at)
     select ?, p.id, p.sku || '-' || ${pick(SIZE, 'v - 1')},
       ${pick(SIZE, 'v - 1')} || ' / ' || ${pick(COLOR, 'p.id + v')},
       round(((p.id * 7919) % 50000) / 100.0 + v * 5, 2),
       -- as the API stores them: JSON.stringify's compact text
       ('{"size":' || to_json(${pick(SIZE, 'v - 1')}) || ',"color":' || to_json(${pick(COLOR, 'p.id + v')}) || '}')::json,
       p.created_at, p.updated_at
     from p cross join generate_series(1, ${VARIANTS_PER_PRODUCT}) v`,
    [workspaceId, from, to, workspaceId],
  );
  if (analyze) {
    await knex.raw('analyze products');
    await knex.raw('analyze variants');
  }
}
