import type { Knex } from 'knex';
import type { Db } from './database.js';

/** A statement's values by name: numbers and texts, each bound as given. */
export type ShapeValues = Record<string, number | string | undefined>;

/** A statement compiled by knex: its `?` text and values, and PostgreSQL's `$n` text. */
export interface CompiledSql {
  sql: string;
  bindings: readonly Knex.Value[];
  native: { sql: string; bindings: readonly Knex.Value[] };
}

/** A shape's texts and, for each value bound, the name it comes from or the constant it is. */
interface Shape {
  sql: string;
  native: string;
  order: ({ name: string } | { constant: Knex.Value })[];
}

const shapes = new Map<string, Shape | null>();
const MAX_SHAPES = 500; // a bound, not an eviction policy: a shape costs one more compile to learn again

/**
 * The statement `build` makes from `values`, compiled by knex once per shape, not on every call: for a list page,
 * building and compiling its statement took longer than PostgreSQL took to run it. `shape` names everything besides
 * the values that `build` reads (the caller's kind of access); which values are given is part of it already.
 *
 * The first call of a shape builds the statement twice: with the values, and with a distinct marker in place of each.
 * The shape is kept when both give the same text and every value bound is a marker or a constant, the values
 * standing in the same places; later calls put their values in those places. A value `build` transforms before
 * binding (a search's LIKE pattern) fails that check, and its shape is compiled on every call, as before.
 */
export function shapedStatement<V extends ShapeValues>(db: Db, shape: string, values: V, build: (values: V) => Knex.QueryBuilder): CompiledSql {
  const given = Object.keys(values).filter((name) => values[name] !== undefined);
  const key = `${db.client.config.client} ${shape} ${given.join(',')}`;
  const known = shapes.get(key);
  if (known) {
    const bindings = known.order.map((place) => ('name' in place ? (values[place.name] as Knex.Value) : place.constant));
    return { sql: known.sql, bindings, native: { sql: known.native, bindings } };
  }
  const compiled = build(values).toSQL();
  const native = compiled.toNative();
  const result = { sql: compiled.sql, bindings: compiled.bindings, native };
  if (known === null) return result;
  if (shapes.size >= MAX_SHAPES) shapes.clear();
  shapes.set(key, learn(db, values, given, build, result));
  return result;
}

/** The shape of `compiled` (built from `values`), or null when a marker in each value's place does not show it. */
function learn<V extends ShapeValues>(db: Db, values: V, given: string[], build: (values: V) => Knex.QueryBuilder, compiled: CompiledSql): Shape | null {
  const markers = new Map<Knex.Value, string>();
  const marked = { ...values };
  given.forEach((name, i) => {
    // Markers no real value or constant of these statements holds, of the value's own type (a builder may treat
    // numbers and texts apart).
    const marker = typeof values[name] === 'number' ? 2_000_000_011 - i : `\u0001shape marker ${i}\u0001`;
    markers.set(marker, name);
    (marked as ShapeValues)[name] = marker;
  });
  const other = build(marked).toSQL();
  if (other.sql !== compiled.sql || other.bindings.length !== compiled.bindings.length) return null;
  const order = other.bindings.map((value): Shape['order'][number] => (markers.has(value) ? { name: markers.get(value)! } : { constant: value }));
  const same = order.every((place, i) => ('name' in place ? values[place.name] : place.constant) === compiled.bindings[i]);
  // The kept `?` text must mean the same to knex's raw as it did to the builder (no `?` of its own in it).
  if (!same || db.raw(compiled.sql, compiled.bindings as Knex.RawBinding).toSQL().toNative().sql !== compiled.native.sql) return null;
  return { sql: compiled.sql, native: compiled.native.sql, order };
}
