// An import's page while it runs (src/web/imports.ts): the progress part is fetched again every second and swapped in;
// once the run is over, the whole page is loaded for its report. Without script the page refreshes itself instead.
'use strict';
(() => {
  if (!document.querySelector('[data-import-progress]')) return;
  const url = `${window.location.pathname.replace(/\/$/, '')}/progress`;
  const tick = async () => {
    let text;
    try {
      const res = await fetch(url, { headers: { accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' });
      text = await res.text();
    } catch {
      // The network failed: tried again on the next tick.
      return setTimeout(tick, 1000);
    }
    const next = new DOMParser().parseFromString(text, 'text/html').querySelector('[data-import-progress]');
    const state = next ? next.getAttribute('data-state') : null;
    // Over, signed out meanwhile, or gone: the page itself says which.
    if (state !== 'waiting' && state !== 'running') return window.location.reload();
    document.querySelector('[data-import-progress]').replaceWith(document.importNode(next, true));
    setTimeout(tick, 1000);
  };
  setTimeout(tick, 1000);
})();
