/**
 * The list pages' links keep their filters: a query string written as URLSearchParams writes it (what a form sends),
 * for values that need no encoding and for those that do, in the query's key order with the changes applied.
 */
import test from 'ava';
import { withQuery } from '../../src/web/lists.js';

test('a link keeps the query and its changes, encoded as a form would send them', (t) => {
  const values = ['sent', '42', 'Buyer & Sons', 'a+b=c', 'ümlaut', "O'Brien (trade) ~*_.-", '100%', '<b>', 'line\nbreak', '😀', ' '];
  for (const q of values) {
    const expected = new URLSearchParams({ status: 'sent', q, page: '3' }).toString();
    t.is(withQuery('/app/quotes', { status: 'sent', q, page: 3 }), `/app/quotes?${expected}`, q);
    t.is(new URLSearchParams(withQuery('', { q }).slice(1)).get('q'), q, `${q} reads back as itself`);
  }
  // Changes replace a key where it stands, add new ones after the query's, and leave out empty values and page 1.
  t.is(withQuery('/app/quotes', { status: 'sent', q: 'x', page: 4, before: 9 }, { status: 'paid', page: undefined, before: undefined, after: 7 }), '/app/quotes?status=paid&q=x&after=7');
  t.is(withQuery('/app/quotes', { q: '', channel_id: undefined, page: 1 }), '/app/quotes');
  t.is(withQuery('/app/quotes', { page: 2 }, { page: 1 }), '/app/quotes');
});
