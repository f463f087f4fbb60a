import { z } from 'zod';

/**
 * Test-time contract check: `data` as the client receives it (JSON round trip) against the route's
 * declared response schema. Parsing alone strips unknown keys, so keys the schema does not declare
 * are looked for separately: the OpenAPI document says `additionalProperties: false` for them.
 * Answers a readable description of every problem, or null when the data matches.
 */
export function responseProblems(schema: z.ZodType, data: unknown): string | null {
  const sent: unknown = JSON.parse(JSON.stringify(data));
  const parsed = schema.safeParse(sent);
  if (!parsed.success) return z.prettifyError(parsed.error);
  const unknown = undeclaredKeys(schema, sent, []);
  return unknown.length ? `keys the schema does not declare: ${unknown.join(', ')}` : null;
}

type Def = { type: string; [key: string]: unknown };
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Paths of object keys in `value` that `schema` (which `value` already satisfies) does not declare. */
function undeclaredKeys(schema: z.ZodType, value: unknown, path: (string | number)[]): string[] {
  const def = defOf(schema);
  const at = (key: string | number) => [...path, key];
  switch (def.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null) return [];
      const shape = def.shape as Record<string, z.ZodType>;
      const open = def.catchall !== undefined && defOf(def.catchall as z.ZodType).type !== 'never';
      return Object.entries(value).flatMap(([key, v]) =>
        key in shape ? undeclaredKeys(shape[key], v, at(key)) : open ? [] : [at(key).join('.')],
      );
    }
    case 'array':
      return Array.isArray(value) ? value.flatMap((item, i) => undeclaredKeys(def.element as z.ZodType, item, at(i))) : [];
    case 'record':
      return typeof value === 'object' && value !== null
        ? Object.entries(value).flatMap(([key, v]) => undeclaredKeys(def.valueType as z.ZodType, v, at(key)))
        : [];
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'nonoptional':
    case 'catch':
      return value === null || value === undefined ? [] : undeclaredKeys(def.innerType as z.ZodType, value, path);
    case 'pipe':
      return undeclaredKeys(def.out as z.ZodType, value, path);
    case 'lazy':
      return undeclaredKeys((def.getter as () => z.ZodType)(), value, path);
    case 'union': {
      // The value matches some option; it is clean when one matching option declares all its keys.
      const results = (def.options as z.ZodType[]).filter((o) => o.safeParse(value).success).map((o) => undeclaredKeys(o, value, path));
      return results.find((r) => r.length === 0) ?? results[0] ?? [];
    }
    case 'intersection': {
      const left = new Set(undeclaredKeys(def.left as z.ZodType, value, path));
      return undeclaredKeys(def.right as z.ZodType, value, path).filter((key) => left.has(key));
    }
    default:
      return [];
  }
}
