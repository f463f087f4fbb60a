/**
 * The fields a partial update gives (PUT = PATCH): an omitted field parses to undefined and is left
 * out, so it keeps its value. `keys` limits the result to those fields (the editable columns).
 */
export function givenFields<T extends object>(input: T, keys: readonly (keyof T)[] = Object.keys(input) as (keyof T)[]): Partial<T> {
  return Object.fromEntries(keys.filter((key) => input[key] !== undefined).map((key) => [key, input[key]])) as Partial<T>;
}
