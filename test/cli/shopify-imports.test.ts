import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { migratedBackend, runImportCli as runCli, tempDir } from '../helpers/cli.js';
import { exportCsv, taxExcludedOrders, taxIncludedOrders } from '../helpers/shopify-exports.js';

/** `quoting import` reads Shopify's exports as the API does: the same report, the same row errors. */

test('a Shopify orders export and a product export with image rows, from files and standard input', async (t) => {
  const env = await migratedBackend(t);
  const created = await runCli(['workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test', '--slug', 'acme'], { env });
  t.is(created.code, 0, created.stderr);
  const dir = tempDir(t, 'quoting-shopify-');
  const orders = path.join(dir, 'orders_export.csv');
  fs.writeFileSync(orders, taxExcludedOrders);

  const first = await runCli(['import', 'orders', orders, '--workspace', 'acme', '--json'], { env });
  t.is(first.code, 1, first.stderr);
  t.deepEqual(JSON.parse(first.stdout), {
    rows: 7, created: 4, updated: 0, unchanged: 0, failed: 2, skipped: 0, notes: [],
    errors: [
      { row: 8, field: 'Subtotal', message: 'Subtotal: the line items come to 23.00, less the discount of 0.00 that is 23.00, not the Subtotal of 25.00.' },
      { row: 9, field: 'order', message: 'order 5501234567894: not imported because line 8 failed.' },
    ],
  });
  const again = await runCli(['import', 'orders', orders, '--workspace', 'acme'], { env });
  t.is(again.code, 1);
  t.regex(again.stdout, /^7 rows read from the orders file in \d+(\.\d)? s: 0 created, 0 updated, 4 unchanged \(orders\), 2 rows failed\.$/m);
  t.regex(again.stdout, /^ {2}line 8, Subtotal: the line items come to 23\.00/m);

  const included = await runCli(['import', 'orders', '-', '--workspace', 'acme', '--json'], { env, input: taxIncludedOrders });
  t.like(JSON.parse(included.stdout), { rows: 5, created: 3, failed: 1, errors: [{ row: 6, field: 'Total' }] });

  const products = path.join(dir, 'products_export.csv');
  fs.writeFileSync(products, exportCsv(['Handle', 'Title', 'Body (HTML)', 'Vendor', 'Type', 'Published', 'Variant SKU', 'Variant Price', 'Image Src', 'Image Position'], [
    { Handle: 'tray', Title: 'Tray', 'Body (HTML)': '<p>Brass.</p>', Vendor: 'Lumen', Type: 'Trays', Published: 'TRUE', 'Variant SKU': 'TRAY-1', 'Variant Price': '50.00', 'Image Src': 'https://cdn.example/tray.jpg', 'Image Position': '1' },
    { Handle: 'tray', 'Image Src': 'https://cdn.example/tray-2.jpg', 'Image Position': '2' },
  ]));
  const catalogue = await runCli(['import', 'products', products, '--workspace', 'acme'], { env });
  t.is(catalogue.code, 0, catalogue.stderr);
  t.regex(catalogue.stdout.trim(), /^1 rows read from the products file in \d+(\.\d)? s: 1 created, 0 updated, 0 unchanged \(rows\), 0 rows failed, 1 rows without a variant of their own skipped\.$/);
});
