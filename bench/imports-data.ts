/** The CSV files of bench/imports.ts: realistic widths, 3 variants per product, 3 items per order, a customer per 3 orders. */
const words = ['organic', 'cotton', 'classic', 'slim', 'relaxed', 'heavyweight', 'recycled', 'merino', 'linen', 'waterproof', 'lightweight', 'premium'];
const pick = (i: number, n: number) => words[(i * 7 + n * 3) % words.length];

export function productCsv(count: number): string {
  const sizes = ['S', 'M', 'L'];
  const lines = ['product_sku,name,type,status,brand,category,description,variant_sku,variant_name,price,attr:size,attr:color'];
  for (let i = 0; i < count; i++) {
    const p = Math.floor(i / 3);
    const size = sizes[i % 3];
    const name = `${pick(p, 1)} ${pick(p, 2)} shirt no. ${p}`;
    const description = `"A ${pick(p, 3)}, ${pick(p, 4)} shirt in ${pick(p, 5)} fabric; cut for everyday wear, machine washable at 30 degrees, made in Portugal. Style ${p}."`;
    lines.push(
      `SHIRT-${String(p).padStart(6, '0')},${name},physical,active,Brand ${p % 40},Shirts > ${pick(p, 6)},${description},` +
        `SHIRT-${String(p).padStart(6, '0')}-${size},${size} / ${pick(p, 7)},${(19 + (p % 50)).toFixed(2)},${size},${pick(p, 8)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export function orderCsv(count: number): string {
  const lines = ['order_number,external_id,external_source,status,currency,customer_email,customer_name,channel_id,placed_at,sku,description,quantity,price'];
  for (let i = 0; i < count; i++) {
    const o = Math.floor(i / 3);
    const c = Math.floor(o / 3);
    lines.push(
      `100${o},,shop,paid,EUR,customer${c}@example.com,Customer ${c},,2026-11-${String(1 + (o % 28)).padStart(2, '0')}T10:00:00Z,` +
        `SHIRT-${String(o % 16000).padStart(6, '0')}-M,"${pick(o, 1)} shirt, size M",${1 + (i % 3)},${(19 + (i % 50)).toFixed(2)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

