/** PostgreSQL's numeric_value_out_of_range: a sum grew past what its column holds. */
export function isNumericOverflow(err: unknown): boolean {
  return (err as { code?: string }).code === '22003';
}
