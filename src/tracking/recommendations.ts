import type { Access } from '../access.js';
import type { Db } from '../db/database.js';
import { scoped } from '../db/scoped.js';

/**
 * Recommendations and category interest, read from the stored events. Every query reads a bounded
 * slice through an index that leads with the workspace (a visitor's latest events, a product's latest
 * viewers, the workspace's latest product events), so the cost of a request does not grow with the
 * history: the answers describe recent behaviour, which is what they are for.
 */

/** The visitor's latest product events taken as "recent views". */
const RECENT_VIEWS = 20;
/** Latest viewers of the seed products (shared among the seeds) whose other views count as co-views. */
const VIEWERS = 200;
/** Latest product events of each such viewer. */
const VIEWS_PER_VIEWER = 20;
/** The workspace's latest product events, for "most viewed". */
const POPULAR_SAMPLE = 10_000;
/** Latest events of one visitor, for their category interest. */
const VISITOR_SAMPLE = 1_000;
/** Latest events of the workspace, for its category interest. */
const WORKSPACE_SAMPLE = 10_000;
/** The visitor's categories that steer recommendations. */
const TOP_CATEGORIES = 5;

const HALF_LIFE_SECONDS = 7 * 86_400;

/**
 * The workspace-wide figures (views among its latest product events, its category interest) are the same for
 * every visitor and change slowly once a workspace has more events than the sample: they are reused for
 * REUSE_MS, then refreshed in the background while the previous ones are still served, for at most STALE_MS
 * in all. A workspace with fewer events than the sample is always read afresh, so small data (a new shop, the
 * tests) never sees a figure that leaves out its latest events. Per process and per database handle.
 */
const REUSE_MS = 10_000;
const STALE_MS = 30_000;
const REUSED_WORKSPACES = 1_000;

export type Reason = 'co_viewed' | 'category' | 'popular';

export interface Recommendation {
  product_id: number;
  sku: string;
  name: string;
  brand: string | null;
  category: string | null;
  score: number;
  reason: Reason;
}

export interface CategoryInterest {
  category: string;
  score: number;
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;

interface Reused {
  value: unknown;
  at: number;
  refreshing: boolean;
}
const reusedByDb = new WeakMap<object, Map<string, Reused>>();

/**
 * `compute()` afresh, or its value from at most REUSE_MS (STALE_MS while a refresh runs) ago. Only a value
 * computed from a full sample (`full`) is kept.
 */
async function reused<T>(db: Db, key: string, compute: () => Promise<{ value: T; full: boolean }>): Promise<T> {
  let entries = reusedByDb.get(db);
  if (!entries) reusedByDb.set(db, (entries = new Map()));
  const store = (result: { value: T; full: boolean }) => {
    entries.delete(key);
    if (!result.full) return;
    if (entries.size >= REUSED_WORKSPACES) entries.delete(entries.keys().next().value!);
    entries.set(key, { value: result.value, at: Date.now(), refreshing: false });
  };
  const entry = entries.get(key);
  const age = entry ? Date.now() - entry.at : Infinity;
  if (entry && age < STALE_MS) {
    if (age >= REUSE_MS && !entry.refreshing) {
      entry.refreshing = true;
      compute().then(store, () => entries.delete(key));
    }
    return entry.value as T;
  }
  const result = await compute();
  store(result);
  return result.value;
}

/** Σ 0.5^(age / 7 days) over events (in float8: numeric power is slow); an event dated ahead of now counts as now. */
const decayed = (occurredAt: string) => `sum(power(0.5::float8, greatest(extract(epoch from now() - ${occurredAt})::float8, 0) / ${HALF_LIFE_SECONDS}))`;

/** The product a sku names, directly or through one of its variants. */
async function productOfSku(db: Db, workspaceId: number, sku: string): Promise<number | null> {
  const { rows } = await db.raw(
    `select coalesce((select id from products where workspace_id = ? and sku = ?),
                     (select product_id from variants where workspace_id = ? and sku = ?)) as id`,
    [workspaceId, sku, workspaceId, sku],
  );
  return rows[0]?.id ?? null;
}

async function recentViews(db: Db, workspaceId: number, visitorId: string): Promise<number[]> {
  const { rows } = await db.raw(
    `select distinct product_id from (
       select product_id from track_events
        where workspace_id = ? and visitor_id = ? and product_id is not null
        order by occurred_at desc, id desc limit ${RECENT_VIEWS}) latest`,
    [workspaceId, visitorId],
  );
  return rows.map((r: { product_id: number }) => r.product_id);
}

interface Scored {
  product_id: number;
  score: number;
}

/** Products that the latest viewers of the seeds also viewed, by how many of those viewers did. */
async function coViewed(db: Db, workspaceId: number, seeds: number[], visitorId: string | undefined, limit: number): Promise<Scored[]> {
  if (seeds.length === 0) return [];
  const { rows } = await db.raw(
    `with viewers as (
       select distinct s.visitor_id
         from unnest(?::int[]) seed(product_id)
        cross join lateral (
          select e.visitor_id from track_events e
           where e.workspace_id = ? and e.product_id = seed.product_id
           order by e.occurred_at desc limit ?) s
        where s.visitor_id is distinct from ?
     )
     select o.product_id, count(distinct o.visitor_id)::int as score
       from viewers v
      cross join lateral (
        select e.product_id, e.visitor_id from track_events e
         where e.workspace_id = ? and e.visitor_id = v.visitor_id and e.product_id is not null
         order by e.occurred_at desc, e.id desc limit ${VIEWS_PER_VIEWER}) o
      join products p on p.workspace_id = ? and p.id = o.product_id and p.status = 'active'
      where o.product_id <> all(?::int[])
      group by o.product_id
      order by score desc, o.product_id
      limit ?`,
    [seeds, workspaceId, Math.ceil(VIEWERS / seeds.length), visitorId ?? null, workspaceId, workspaceId, seeds, limit],
  );
  return rows;
}

/** The visitor's categories (their own or their products'), or the workspace's, by decayed interest. */
async function interestOf(db: Db, workspaceId: number, visitorId: string | undefined, limit: number | null): Promise<CategoryInterest[]> {
  if (visitorId === undefined) return reused(db, `interest:${workspaceId}`, () => readInterest(db, workspaceId, undefined, limit));
  return (await readInterest(db, workspaceId, visitorId, limit)).value;
}

async function readInterest(db: Db, workspaceId: number, visitorId: string | undefined, limit: number | null): Promise<{ value: CategoryInterest[]; full: boolean }> {
  const sample = visitorId === undefined ? WORKSPACE_SAMPLE : VISITOR_SAMPLE;
  const { rows } = await db.raw(
    `with e as (select category, product_id, occurred_at from track_events
                 where workspace_id = ? ${visitorId === undefined ? '' : 'and visitor_id = ?'}
                 order by occurred_at desc limit ${sample})
     select category, ${decayed('occurred_at')} as score, (select count(*) from e)::int as sampled
       from (select coalesce(e.category, p.category) as category, e.occurred_at
               from e left join products p on p.workspace_id = ? and p.id = e.product_id) c
      where category is not null
      group by category
      order by score desc, category
      ${limit === null ? '' : `limit ${Number(limit)}`}`,
    [workspaceId, ...(visitorId === undefined ? [] : [visitorId]), workspaceId],
  );
  return {
    value: rows.map((r: { category: string; score: number }) => ({ category: r.category, score: round(r.score) })),
    full: rows.length > 0 && rows[0].sampled === sample,
  };
}

/** Views per product among the workspace's latest product events, the most viewed first (then by id). */
async function productViews(db: Db, workspaceId: number): Promise<Scored[]> {
  return reused(db, `views:${workspaceId}`, async () => {
    const { rows } = await db.raw(
      `select product_id, count(*)::int as score
         from (select product_id from track_events
                where workspace_id = ? and product_id is not null
                order by occurred_at desc limit ${POPULAR_SAMPLE}) latest
        group by product_id
        order by score desc, product_id`,
      [workspaceId],
    );
    return { value: rows as Scored[], full: rows.reduce((n: number, r: Scored) => n + r.score, 0) === POPULAR_SAMPLE };
  });
}

/** Active products of the categories, the most viewed of each first. */
async function inCategories(db: Db, workspaceId: number, categories: CategoryInterest[], views: Scored[], limit: number): Promise<Scored[]> {
  if (categories.length === 0) return [];
  const products: { id: number; category: string }[] = await scoped(db, 'products', workspaceId)
    .where({ status: 'active' })
    .whereIn('category', categories.map((c) => c.category))
    .select('id', 'category');
  const interest = new Map(categories.map((c) => [c.category, c.score]));
  const viewsOf = new Map(views.map((v) => [v.product_id, v.score]));
  return products
    .map((p) => ({ product_id: p.id, score: interest.get(p.category)!, views: viewsOf.get(p.id) ?? 0 }))
    .sort((a, b) => b.score - a.score || b.views - a.views || a.product_id - b.product_id)
    .slice(0, limit);
}

/** The active products viewed most among the workspace's latest product events (in chunks: most are active). */
async function mostViewed(db: Db, workspaceId: number, views: Scored[], limit: number): Promise<Scored[]> {
  const found: Scored[] = [];
  for (let from = 0; from < views.length && found.length < limit; ) {
    const chunk = views.slice(from, from + Math.max(2 * (limit - found.length), 20));
    from += chunk.length;
    const active = new Set<number>(
      await scoped(db, 'products', workspaceId).where({ status: 'active' }).whereIn('id', chunk.map((v) => v.product_id)).pluck('id'),
    );
    for (const v of chunk) if (active.has(v.product_id) && found.length < limit) found.push(v);
  }
  return found;
}

/**
 * Active products only, in three tiers: co-viewed with `sku` (or, without it, with the visitor's
 * recent views), then the visitor's top categories, then the workspace's most viewed. A product
 * appears once, under its first reason; the seeds themselves are not recommended. Nothing is made
 * up: with no events there are no recommendations.
 */
export async function recommend(db: Db, access: Access, input: { visitor_id?: string; sku?: string; limit: number }): Promise<Recommendation[]> {
  const ws = access.workspaceId;
  const { visitor_id: visitorId, limit } = input;
  const skuProduct = input.sku === undefined ? null : await productOfSku(db, ws, input.sku);
  const seeds = skuProduct !== null ? [skuProduct] : visitorId !== undefined ? await recentViews(db, ws, visitorId) : [];
  const exclude = new Set(seeds);
  const picked: { product_id: number; score: number; reason: Reason }[] = [];
  const take = (scored: Scored[], reason: Reason) => {
    for (const { product_id, score } of scored) {
      if (picked.length >= limit) return;
      if (exclude.has(product_id)) continue;
      exclude.add(product_id);
      picked.push({ product_id, score: round(Number(score)), reason });
    }
  };
  // Each tier asks for enough to fill the list even when the tiers before overlap with it.
  take(await coViewed(db, ws, seeds, visitorId, limit), 'co_viewed');
  if (picked.length < limit) {
    const views = await productViews(db, ws);
    if (visitorId !== undefined) {
      const categories = await interestOf(db, ws, visitorId, TOP_CATEGORIES);
      take(await inCategories(db, ws, categories, views, limit + exclude.size), 'category');
    }
    if (picked.length < limit) take(await mostViewed(db, ws, views, limit + exclude.size), 'popular');
  }
  if (picked.length === 0) return [];
  const products = await scoped(db, 'products', ws)
    .where({ status: 'active' })
    .whereIn('id', picked.map((p) => p.product_id))
    .select('id', 'sku', 'name', 'brand', 'category');
  const byId = new Map<number, { sku: string; name: string; brand: string | null; category: string | null }>(products.map((p: { id: number; sku: string; name: string; brand: string | null; category: string | null }) => [p.id, p]));
  // A product archived since the tier query ran is dropped, not shown.
  return picked.flatMap(({ product_id, score, reason }) => {
    const p = byId.get(product_id);
    return p ? [{ product_id, sku: p.sku, name: p.name, brand: p.brand, category: p.category, score, reason }] : [];
  });
}

/** Interest per category with a 7-day half-life: the visitor's, or the whole workspace's recent events. */
export async function categoryInterest(db: Db, access: Access, input: { visitor_id?: string }): Promise<CategoryInterest[]> {
  return interestOf(db, access.workspaceId, input.visitor_id, null);
}
