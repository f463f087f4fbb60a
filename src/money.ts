/** quantity × price rounded half-up to cents, exactly, in integers. */
export function lineTotalCents(quantity: string, price: string): bigint {
  const scaled = (text: string, scale: number) => {
    const [whole, fraction = ''] = text.split('.');
    return BigInt(whole + fraction.padEnd(scale, '0'));
  };
  return (scaled(quantity, 3) * scaled(price, 2) + 500n) / 1000n;
}

/** The most cents a numeric(14,2) column holds, plus one. */
export const CENTS_LIMIT = 10n ** 14n;

/**
 * Whether quantity × price, rounded half-up to cents, stays below 10^12 (what numeric(14,2) holds); exact, in integers.
 * Two factors with at most 11 integer digits between them (leading zeros counted too) multiply to less than 10^11:
 * answered without BigInt, the common case kept cheap.
 */
export function lineTotalFits(quantity: string, price: string): boolean {
  if (integerDigits(quantity) + integerDigits(price) <= 11) return true;
  return lineTotalCents(quantity, price) < CENTS_LIMIT;
}

const integerDigits = (decimal: string) => {
  const point = decimal.indexOf('.');
  return point === -1 ? decimal.length : point;
};

/** Whether a decimal string (or a missing amount) is zero, read on the text itself, never through a float. */
export function isZeroAmount(amount: unknown): boolean {
  return /^0*(\.0*)?$/.test(String(amount ?? '0'));
}

/** Money text as PostgreSQL prints numeric(14,2): "12.5" and "012.50" are both "12.50". Text only, never a float. */
export function moneyText(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const [whole, fraction = ''] = value.split('.');
  return `${whole.replace(/^0+(?=\d)/, '')}.${fraction.padEnd(2, '0')}`;
}

/** A quantity as trim_scale(numeric)::text prints it: "1.500" is "1.5", "2.000" is "2". */
export function quantityText(value: string): string {
  const [whole, fraction = ''] = value.split('.');
  const trimmed = fraction.replace(/0+$/, '');
  return `${whole.replace(/^0+(?=\d)/, '')}${trimmed ? `.${trimmed}` : ''}`;
}

const wholeNumber = /^-?\d+$/;

/** `1234.50` → `1,234.50`: grouping on the decimal string itself, never through a float. */
function groupDigits(amount: string): string {
  const point = amount.indexOf('.');
  const end = point === -1 ? amount.length : point;
  // The digits from the first, past a sign; a group's comma goes before every third digit from the end.
  const start = amount.charCodeAt(0) === 45 /* - */ ? 1 : 0;
  if (end - start <= 3) return amount;
  if (!wholeNumber.test(amount.slice(0, end))) return amount.slice(0, end).replace(/\B(?=(\d{3})+(?!\d))/g, ',') + amount.slice(end); // not a number's text
  let out = amount.slice(0, start + ((end - start) % 3 || 3));
  for (let at = out.length; at < end; at += 3) out += `,${amount.slice(at, at + 3)}`;
  return out + amount.slice(end);
}

/** An amount as people read it, always with its currency: `EUR 1,234.50`. */
export const amountText = (currency: string, amount: unknown): string => `${currency} ${groupDigits(String(amount ?? '0.00'))}`;
