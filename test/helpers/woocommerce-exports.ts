/**
 * WooCommerce product exports as Products → Export writes them (WooCommerce's sample_products.csv is the model),
 * written by column name: a test names only the cells it cares about.
 */

/**
 * A cell as PHP's fputcsv writes it: quoted when it holds the delimiter, a quote, a space, a tab or a line break
 * (so `"Is featured?"` and `"Clothing > Tshirts"` are quoted, `Hoodie` is not).
 */
const quoted = (value: string) => (/[",\s]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/** The exporter's default columns, in its order (a shop with weights in kg and sizes in cm), then the attributes and one meta column. */
export const wooHeader = [
  'ID', 'Type', 'SKU', 'GTIN, UPC, EAN, or ISBN', 'Name', 'Published', 'Is featured?', 'Visibility in catalog', 'Short description', 'Description',
  'Date sale price starts', 'Date sale price ends', 'Tax status', 'Tax class', 'In stock?', 'Stock', 'Low stock amount', 'Backorders allowed?',
  'Sold individually?', 'Weight (kg)', 'Length (cm)', 'Width (cm)', 'Height (cm)', 'Allow customer reviews?', 'Purchase note', 'Sale price',
  'Regular price', 'Categories', 'Tags', 'Shipping class', 'Images', 'Download limit', 'Download expiry days', 'Parent', 'Grouped products',
  'Upsells', 'Cross-sells', 'External URL', 'Button text', 'Position', 'Attribute 1 name', 'Attribute 1 value(s)', 'Attribute 1 visible',
  'Attribute 1 global', 'Attribute 2 name', 'Attribute 2 value(s)', 'Attribute 2 visible', 'Attribute 2 global', 'Meta: _wpcom_is_markdown',
];

/** The cells every row of the export has, whatever its type. */
const common = { 'Is featured?': '0', 'Visibility in catalog': 'visible', 'Tax status': 'taxable', 'In stock?': '1', 'Backorders allowed?': '0', 'Sold individually?': '0', 'Allow customer reviews?': '1', Position: '0' };

/** An export: the header, then each row's cells by column name (missing ones empty), lines ending in a newline. */
export function wooCsv(header: string[], rows: Record<string, string>[]): string {
  return [header.map(quoted).join(','), ...rows.map((row) => header.map((name) => quoted({ ...common, ...row }[name] ?? '')).join(','))].join('\n') + '\n';
}

const tee = 'https://shop.example/wp-content/uploads/2026/03/vneck-tee.jpg';

/**
 * A clothing and music shop's whole catalogue, in the exporter's order (by ID: parents first, variations after
 * every other product). Lines: header 1; the variable V-Neck T-Shirt 2 and Hoodie 3 (no SKU: `id:45`); simple
 * products 4–6; a grouped 7; an external 8; a simple 9 whose name the exporter escaped; variations 10–13.
 */
export const wooCatalogue = wooCsv(wooHeader, [
  {
    ID: '44', Type: 'variable', SKU: 'woo-vneck-tee', Name: 'V-Neck T-Shirt', Published: '1', 'Is featured?': '1', 'Short description': 'This is a variable product.',
    Description: 'Soft cotton jersey.\\nMachine wash cold.', 'Weight (kg)': '.5', 'Length (cm)': '24', 'Width (cm)': '1', 'Height (cm)': '2', Categories: 'Clothing > Tshirts',
    Tags: 'summer, cotton', Images: `${tee}, https://shop.example/wp-content/uploads/2026/03/vneck-tee-green.jpg`, 'Attribute 1 name': 'Color',
    'Attribute 1 value(s)': 'Blue, Green, Red', 'Attribute 1 visible': '1', 'Attribute 1 global': '1', 'Attribute 2 name': 'Size',
    'Attribute 2 value(s)': 'Large, Medium, Small', 'Attribute 2 visible': '1', 'Attribute 2 global': '1', 'Meta: _wpcom_is_markdown': '1',
  },
  {
    ID: '45', Type: 'variable', SKU: '', Name: 'Hoodie', Published: '-1', 'Short description': 'This is a variable product.', Description: '<p>Brushed fleece.</p>',
    Categories: 'Clothing > Hoodies, Clothing', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Blue, Red', 'Attribute 1 visible': '1', 'Attribute 1 global': '1',
    'Attribute 2 name': 'Logo', 'Attribute 2 value(s)': 'Yes, No', 'Attribute 2 visible': '1', 'Attribute 2 global': '0', 'Meta: _wpcom_is_markdown': '1',
  },
  {
    ID: '46', Type: 'simple, downloadable, virtual', SKU: 'woo-album', Name: 'Album', Published: '0', 'Short description': 'This is a simple, virtual product.',
    Description: 'Ten songs.\\nFiles in C:\\\\new albums.', 'Date sale price starts': '2021-01-01 0:00:00', 'Date sale price ends': '2021-01-31 23:59:59', 'Sale price': '12',
    'Regular price': '15', Categories: 'Music', 'Download limit': '1', 'Download expiry days': '1', 'Meta: _wpcom_is_markdown': '1',
  },
  {
    ID: '47', Type: 'simple', SKU: 'woo-beanie', Name: 'Beanie, knitted', Published: '1', Description: 'Warm.', 'Weight (kg)': '.2', 'Sale price': '18',
    'Regular price': '20', Categories: 'Clothing > Accessories', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Red', 'Attribute 1 visible': '1',
    'Attribute 1 global': '1', 'Meta: _wpcom_is_markdown': '1',
  },
  {
    ID: '48', Type: 'simple', SKU: 'woo-cap', Name: 'Cap', Published: '2', Description: 'Cotton twill.', 'Date sale price starts': '2020-01-01 0:00:00',
    'Date sale price ends': '2099-12-31 23:59:59', 'Sale price': '16', 'Regular price': '18', Categories: 'Clothing > Accessories', 'Attribute 1 name': 'Material',
    'Attribute 1 value(s)': 'Cotton, Polyester', 'Attribute 1 visible': '1', 'Attribute 1 global': '0',
  },
  {
    ID: '49', Type: 'grouped', SKU: 'logo-collection', Name: 'Logo Collection', Published: '1', Description: 'Three logo pieces.', Categories: 'Clothing',
    'Grouped products': 'woo-beanie, woo-cap, id:45', 'Meta: _wpcom_is_markdown': '1',
  },
  {
    ID: '50', Type: 'external', SKU: 'wp-pennant', Name: 'WordPress Pennant', Published: '1', Description: 'A felt pennant.', 'Regular price': '11.05',
    Categories: 'Decor', 'External URL': 'https://mercantile.wordpress.org/product/wordpress-pennant/', 'Button text': 'Buy on the WordPress swag store!',
  },
  { ID: '51', Type: 'simple', SKU: 'parka-40', Name: "'-40° Parka", Published: '1', 'Regular price': '199', Categories: 'Clothing > Jackets\\, coats, Sale' },
  {
    ID: '76', Type: 'variation', SKU: 'woo-vneck-tee-red', Name: 'V-Neck T-Shirt - Red', Published: '1', Description: 'Red dye.', 'Regular price': '20', Images: tee,
    Parent: 'woo-vneck-tee', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Red', 'Attribute 1 global': '1', 'Attribute 2 name': 'Size', 'Attribute 2 global': '1',
  },
  {
    ID: '77', Type: 'variation', SKU: '', Name: 'V-Neck T-Shirt - Green, Large', Published: '1', 'Date sale price starts': '2099-01-01 0:00:00', 'Sale price': '18',
    'Regular price': '20', Parent: 'woo-vneck-tee', 'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Green', 'Attribute 1 global': '1', 'Attribute 2 name': 'Size',
    'Attribute 2 value(s)': 'Large', 'Attribute 2 global': '1',
  },
  {
    ID: '79', Type: 'variation', SKU: 'woo-hoodie-red', Name: 'Hoodie - Red, No', Published: '-1', 'Sale price': '42', 'Regular price': '45', Parent: 'id:45',
    'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Red', 'Attribute 1 global': '1', 'Attribute 2 name': 'Logo', 'Attribute 2 value(s)': 'No', 'Attribute 2 global': '0',
  },
  {
    ID: '80', Type: 'variation', SKU: 'woo-hoodie-blue-logo', Name: 'Hoodie - Blue, Yes', Published: '-1', 'Regular price': '45', Parent: 'id:45',
    'Attribute 1 name': 'Color', 'Attribute 1 value(s)': 'Blue', 'Attribute 1 global': '1', 'Attribute 2 name': 'Logo', 'Attribute 2 value(s)': 'Yes', 'Attribute 2 global': '0',
  },
]);

/** The notes the catalogue's grouped and external products get (lines 7 and 8). */
export const wooCatalogueNotes = [
  { row: 7, field: 'Type', message: 'Type: a grouped product, imported as a single product; the products it groups (woo-beanie, woo-cap, id:45) are not linked to it.' },
  { row: 8, field: 'Type', message: 'Type: an external product, imported as a single product; its External URL (https://mercantile.wordpress.org/product/wordpress-pennant/) is not kept.' },
];
