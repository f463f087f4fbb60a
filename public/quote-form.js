// The quote form's niceties (src/web/quote-form.ts): lines added, removed and moved in the browser, live totals,
// catalogue prices for SKUs, customer suggestions as you type, the channel's currency. Without it the form's
// buttons do the same through the server; the totals stored are the server's.
'use strict';
(() => {
  const form = document.getElementById('quote-form');
  const body = document.getElementById('quote-lines');
  if (!form || !body) return;

  // Decimal text to a whole number of 10^-scale units (BigInt: no float between the typed text and the total).
  const units = (text, scale) => {
    const match = /^\s*(\d*)(?:\.(\d*))?\s*$/.exec(text || '');
    if (!match || (match[1] === '' && !match[2])) return null;
    const fraction = (match[2] || '').slice(0, scale).padEnd(scale, '0');
    return BigInt((match[1] || '0') + fraction);
  };
  const roundDiv = (n, d) => (n >= 0n ? (n + d / 2n) / d : -((-n + d / 2n) / d));
  const money = (cents) => {
    const negative = cents < 0n;
    const text = (negative ? -cents : cents).toString().padStart(3, '0');
    const whole = text.slice(0, -2).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return `${negative ? '-' : ''}${whole}.${text.slice(-2)}`;
  };

  const input = (row, name) => row.querySelector(`[name="line_${name}"]`);
  const rows = () => Array.from(body.querySelectorAll('tr.line-row'));

  function currency() {
    const typed = form.elements.namedItem('currency');
    const value = typed && typed.value.trim().toUpperCase();
    if (value && /^[A-Z]{3}$/.test(value)) return value;
    return (typed && typed.placeholder) || 'USD';
  }

  function recalc() {
    let subtotal = 0n;
    let known = true;
    for (const row of rows()) {
      const priceInput = input(row, 'price');
      const quantity = units(input(row, 'quantity').value || '1', 3);
      const price = units(priceInput.value || priceInput.dataset.catalogue || '', 2);
      const cell = row.querySelector('.line-total');
      const empty = !input(row, 'sku').value.trim() && !input(row, 'description').value.trim() && !priceInput.value.trim();
      if (empty) { cell.textContent = ''; continue; }
      if (quantity === null || price === null) { cell.textContent = '—'; known = false; continue; }
      const total = roundDiv(quantity * price, 1000n);
      cell.textContent = money(total);
      subtotal += total;
    }
    const discount = units(form.elements.namedItem('discount_amount').value || '0', 2) ?? 0n;
    const rate = units(form.elements.namedItem('tax_rate').value || '0', 4) ?? 0n;
    const tax = roundDiv((subtotal - discount) * rate, 1000000n);
    const show = (name, cents) => {
      const cell = document.querySelector(`#quote-totals [data-total="${name}"]`);
      if (cell) cell.textContent = known ? `${currency()} ${money(cents)}` : '—';
    };
    show('subtotal', subtotal);
    show('discount', discount);
    show('tax', tax);
    show('total', subtotal - discount + tax);
    const note = document.getElementById('totals-note');
    if (note) note.textContent = 'As typed; the totals stored are computed when you save.';
  }

  // Ids, labels and button values follow a row's place, as the server renders them.
  function renumber() {
    const all = rows();
    all.forEach((row, index) => {
      for (const el of row.querySelectorAll('[id], [for], [aria-describedby]')) {
        for (const attr of ['id', 'for', 'aria-describedby']) {
          const value = el.getAttribute(attr);
          if (value) el.setAttribute(attr, value.replace(/line-\d+-/g, `line-${index}-`));
        }
      }
      for (const label of row.querySelectorAll('label')) label.textContent = label.textContent.replace(/^Line \d+/, `Line ${index + 1}`);
      for (const button of row.querySelectorAll('button[name="action"]')) {
        const verb = button.value.split(':')[0];
        button.value = `${verb}:${index}`;
        button.setAttribute('aria-label', button.getAttribute('aria-label').replace(/line \d+/, `line ${index + 1}`));
        button.disabled = (verb === 'up' && index === 0) || (verb === 'down' && index === all.length - 1);
      }
    });
  }

  function blankRow() {
    const row = rows()[0].cloneNode(true);
    row.classList.remove('invalid');
    for (const el of row.querySelectorAll('.field-error')) el.remove();
    for (const el of row.querySelectorAll('input')) {
      el.removeAttribute('aria-invalid');
      el.removeAttribute('aria-describedby');
      el.removeAttribute('data-catalogue');
      el.value = el.name === 'line_quantity' ? '1' : '';
      if (el.name === 'line_description') el.placeholder = '';
      if (el.name === 'line_price') el.placeholder = 'From catalogue';
    }
    for (const cell of row.querySelectorAll('td.invalid')) cell.classList.remove('invalid');
    return row;
  }

  form.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[name="action"]') : null;
    if (!button) return;
    const [verb, at] = button.value.split(':');
    const row = rows()[Number(at)];
    let focus = null;
    if (verb === 'add') {
      const fresh = blankRow();
      body.appendChild(fresh);
      focus = input(fresh, 'sku');
    } else if (verb === 'remove' && row) {
      const next = row.nextElementSibling || row.previousElementSibling;
      if (next) { row.remove(); focus = input(next, 'sku'); } else { row.replaceWith(blankRow()); focus = input(rows()[0], 'sku'); }
    } else if (verb === 'up' && row && row.previousElementSibling) {
      body.insertBefore(row, row.previousElementSibling);
      focus = button;
    } else if (verb === 'down' && row && row.nextElementSibling) {
      body.insertBefore(row.nextElementSibling, row);
      focus = button;
    } else {
      return; // `find` and anything else: the server's turn.
    }
    event.preventDefault();
    renumber();
    recalc();
    if (focus && !focus.disabled) focus.focus();
    else if (focus) (row.querySelector('button:not([disabled])') || input(row, 'sku')).focus();
  });

  const debounce = (fn, ms) => {
    let timer = 0;
    return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
  };
  const fragment = async (url) => {
    const res = await fetch(url, { credentials: 'same-origin', headers: { accept: 'text/html' } });
    if (!res.ok) return null;
    return new DOMParser().parseFromString(await res.text(), 'text/html').body.firstElementChild;
  };

  // A SKU's catalogue description and price as placeholders: what saving fills in when the inputs are left empty.
  const lookUp = async (row) => {
    const sku = input(row, 'sku').value.trim();
    const price = input(row, 'price');
    const description = input(row, 'description');
    delete price.dataset.catalogue;
    price.placeholder = 'From catalogue';
    description.placeholder = '';
    if (sku) {
      const found = await fragment(`/app/quotes/new/sku?sku=${encodeURIComponent(sku)}`).catch(() => null);
      if (found && found.dataset.sku === sku) {
        if (found.dataset.price) { price.dataset.catalogue = found.dataset.price; price.placeholder = found.dataset.price; }
        description.placeholder = found.dataset.description || '';
      }
    }
    recalc();
  };
  const timers = new WeakMap();
  const lookUpSoon = (row) => {
    clearTimeout(timers.get(row));
    timers.set(row, setTimeout(() => lookUp(row), 250));
  };

  form.addEventListener('input', (event) => {
    const el = event.target;
    if (el.name === 'line_sku') lookUpSoon(el.closest('tr'));
    recalc();
  });

  // The channel's currency is what an empty currency field means: shown as its placeholder.
  const channel = form.elements.namedItem('channel_id');
  const currencyInput = form.elements.namedItem('currency');
  if (channel && currencyInput && channel.dataset.currencies) {
    const currencies = JSON.parse(channel.dataset.currencies);
    const follow = () => { currencyInput.placeholder = currencies[channel.value] || 'USD'; recalc(); };
    channel.addEventListener('change', follow);
    follow();
  }

  // Customers as you type: the server's choices for the search, replacing the list.
  const search = form.elements.namedItem('customer_q');
  if (search && search.dataset.suggest) {
    const suggestNow = async () => {
      const picked = form.querySelector('input[name="customer_id"]:checked');
      const q = search.value.trim();
      if (q.length < 2) return;
      const url = `${search.dataset.suggest}?q=${encodeURIComponent(q)}&customer_id=${encodeURIComponent(picked ? picked.value : '')}`;
      const found = await fragment(url).catch(() => null);
      const list = document.getElementById('customer-choices');
      if (found && list && found.id === 'customer-choices' && search.value.trim() === q) list.replaceWith(document.importNode(found, true));
    };
    search.addEventListener('input', debounce(suggestNow, 250));
    // Enter in the search looks up customers, as its Find button does, rather than saving the quote.
    search.addEventListener('keydown', (event) => {
      if (event.key !== 'Enter') return;
      event.preventDefault();
      suggestNow();
    });
  }

  for (const row of rows()) if (input(row, 'sku').value.trim()) lookUp(row);
  recalc();
})();
