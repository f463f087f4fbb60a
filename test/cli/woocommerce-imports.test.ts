import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { migratedBackend, runImportCli as runCli, tempDir } from '../helpers/cli.js';
import { wooCatalogue, wooCatalogueNotes, wooCsv, wooHeader } from '../helpers/woocommerce-exports.js';

/** `quoting import` reads WooCommerce's product exports as the API does: the same report, its notes and row errors. */

test('a WooCommerce catalogue from a file, then an export with a variation before its parent from standard input', async (t) => {
  const env = await migratedBackend(t);
  const created = await runCli(['workspace', 'create', '--name', 'Acme', '--owner-email', 'owner@acme.test', '--slug', 'acme'], { env });
  t.is(created.code, 0, created.stderr);
  const dir = tempDir(t, 'quoting-woocommerce-');
  const file = path.join(dir, 'wc-product-export-28-11-2026-1764290000000.csv');
  fs.writeFileSync(file, wooCatalogue);

  const first = await runCli(['import', 'products', file, '--workspace', 'acme', '--json'], { env });
  t.is(first.code, 0, first.stderr);
  t.deepEqual(JSON.parse(first.stdout), { rows: 10, created: 10, updated: 0, unchanged: 0, failed: 0, skipped: 2, errors: [], notes: wooCatalogueNotes });

  // The summary counts the skipped variable products' rows and lists the notes after it.
  const again = await runCli(['import', 'products', file, '--workspace', 'acme'], { env });
  t.is(again.code, 0, again.stderr);
  const lines = again.stdout.trim().split('\n');
  t.regex(lines[0], /^10 rows read from the products file in \d+(\.\d)? s: 0 created, 0 updated, 10 unchanged \(rows\), 0 rows failed, 2 rows without a variant of their own skipped, 2 notes\.$/);
  t.deepEqual(lines.slice(1), [
    '  note, line 7, Type: a grouped product, imported as a single product; the products it groups (woo-beanie, woo-cap, id:45) are not linked to it.',
    '  note, line 8, Type: an external product, imported as a single product; its External URL (https://mercantile.wordpress.org/product/wordpress-pennant/) is not kept.',
  ]);

  const backwards = wooCsv(wooHeader, [
    { ID: '91', Type: 'variation', SKU: 'scarf-grey', Name: 'Scarf - Grey', Published: '1', 'Regular price': '25', Parent: 'id:90', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Grey' },
    { ID: '90', Type: 'variable', SKU: 'woo-scarf', Name: 'Scarf', Published: '1', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Grey' },
    { ID: '92', Type: 'simple', SKU: 'gloves', Name: 'Gloves', Published: '1', 'Regular price': '19' },
  ]);
  const piped = await runCli(['import', 'products', '-', '--workspace', 'acme', '--json'], { env, input: backwards });
  t.is(piped.code, 1, piped.stderr);
  t.deepEqual(JSON.parse(piped.stdout), {
    rows: 3, created: 1, updated: 0, unchanged: 0, failed: 2, skipped: 0, notes: [],
    errors: [
      { row: 2, field: 'Parent', message: 'Parent: no product id:90 on an earlier line (a variation comes after its variable product).' },
      { row: 3, field: 'Type', message: 'Type: variable product woo-scarf has no variation rows in the file, so it was not imported.' },
    ],
  });
});
