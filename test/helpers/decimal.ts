/**
 * An independent decimal calculator for checking the app's money arithmetic: exact BigInt fixed
 * point, half-up rounding, nothing shared with the app or PostgreSQL.
 */

/** `text` ("12.5", "3") as an integer count of 10^-scale units. */
export function units(text: string, scale: number): bigint {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!match) throw new Error(`not a non-negative decimal: ${text}`);
  const fraction = match[2] ?? '';
  if (fraction.length > scale) throw new Error(`${text} has more than ${scale} decimals`);
  return BigInt(match[1] + fraction.padEnd(scale, '0'));
}

/** Units of 10^-scale as decimal text with exactly `scale` decimals. */
export function format(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const text = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return negative ? `-${text}` : text;
}

/** numerator / denominator rounded half-up (away from zero on a tie), for non-negative values. */
function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  if (numerator < 0n || denominator <= 0n) throw new Error('divideHalfUp takes non-negative values');
  return (numerator * 2n + denominator) / (denominator * 2n);
}

/** quantity × price rounded half-up to cents, as a money string. */
export function lineTotal(quantity: string, price: string): string {
  return format(divideHalfUp(units(quantity, 3) * units(price, 2), 1000n), 2);
}

export interface Totals {
  lineTotals: string[];
  subtotal: string;
  discount_amount: string;
  tax_amount: string;
  total: string;
}

/**
 * The spec's totals: line total = quantity × price rounded half-up to cents; subtotal = Σ line
 * totals; tax = (subtotal − discount) × tax_rate / 100 rounded half-up; total = subtotal − discount + tax.
 */
export function totals(lines: { quantity: string; price: string }[], discount = '0', taxRate = '0'): Totals {
  const lineTotals = lines.map((line) => lineTotal(line.quantity, line.price));
  const subtotal = lineTotals.reduce((sum, total) => sum + units(total, 2), 0n);
  const taxable = subtotal - units(discount, 2);
  if (taxable < 0n) throw new Error('discount exceeds subtotal');
  // cents × rate (4 decimals) / 100 → cents: divide by 10^4 × 100.
  const tax = divideHalfUp(taxable * units(taxRate, 4), 1_000_000n);
  return {
    lineTotals,
    subtotal: format(subtotal, 2),
    discount_amount: format(units(discount, 2), 2),
    tax_amount: format(tax, 2),
    total: format(taxable + tax, 2),
  };
}
